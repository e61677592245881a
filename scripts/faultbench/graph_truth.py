"""Where a graph-side fault is, found without the metadata the gate reads (the exporter's
``name_scopes``): by value.

- An initializer's module: the module whose parameter or buffer the initializer is, its values equal
  to that tensor or to its transpose (the exporter stores a Linear's weight transposed for MatMul).
  Initializers no tensor equals (a Conv with its BatchNorm folded in) belong to no single module.
- A node fault's module: the first module, in the order calls return, whose output the fault changes,
  as the model-side truth (``truth.py``) takes it: each module call's output (float64, as the gate's
  reference computes it) is found among the unchanged graph's values in an ONNX Runtime run by value
  (the closest within float32 rounding), and that value is compared with the faulted graph's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from faultbench.truth import _tensors

SAME = 1e-4  # relative L2 within which a float32 ONNX Runtime value and a PyTorch output are one value


def weights_in_graph(proto: onnx.ModelProto, model: torch.nn.Module) -> dict[str, str]:
    """Initializer -> the parameter or buffer it is (by value), for those that are one."""
    tensors = {n: t.detach().cpu().numpy() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    by_shape: dict[tuple, list[str]] = {}
    for name, t in tensors.items():
        by_shape.setdefault(tuple(t.shape), []).append(name)
        if t.ndim == 2:
            by_shape.setdefault(tuple(t.shape[::-1]), []).append(name)
    out = {}
    for init in proto.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or not init.dims or np.prod(init.dims) < 16:
            continue  # shapes, scalars and small constants are no module's weight
        value = numpy_helper.to_array(init)
        for name in by_shape.get(tuple(value.shape), []):
            t = tensors[name]
            if (t.shape == value.shape and np.array_equal(t, value)) or (t.ndim == 2 and np.array_equal(t.T, value)):
                out[init.name] = name
                break
    return out


def module_of_tensor(name: str) -> str:
    return name.rpartition(".")[0]


def deep_weight(proto: onnx.ModelProto, model: torch.nn.Module, depth: float = 0.6,
                keep: Callable[[np.ndarray], bool] | None = None) -> tuple[str, str]:
    """(initializer, module): a weight matrix or kernel (not a bias or a norm's scale: rounding a bias
    initialized near zero to float16 moves nothing measurable) about ``depth`` of the way through the
    graph, in the order nodes first use it, that is exactly one module's (and whose values ``keep``
    accepts)."""
    weights = weights_in_graph(proto, model)
    owned = {i.name: weights[i.name] for i in proto.graph.initializer
             if i.name in weights and len(i.dims) >= 2 and (keep is None or keep(numpy_helper.to_array(i)))}
    order: list[str] = []
    for node in proto.graph.node:
        order += [i for i in node.input if i in owned and i not in order]
    if not order:
        raise ValueError("no initializer of the graph is one of the model's tensors")
    chosen = order[min(int(len(order) * depth), len(order) - 1)]
    return chosen, module_of_tensor(owned[chosen])


def _module_outputs(built) -> list[tuple[str, np.ndarray]]:
    """(module, output) of every module call, in the order calls return, computed in float64 as the
    gate's reference computes them."""
    from gate.model.build import inference_mode
    from gate.runners.reference import as_float64

    calls: list[tuple[str, np.ndarray]] = []
    with built.fresh():
        model, inputs = as_float64(built.module, built.inputs)
        for n, m in model.named_modules():
            if n:
                m.register_forward_hook(lambda _m, _i, out, n=n: calls.extend(
                    (n, t.detach().clone().numpy()) for t in _tensors(out) if t.is_floating_point()))
        with inference_mode():
            model(*inputs)
    return calls


def _all_values(proto: onnx.ModelProto, built) -> dict[str, np.ndarray]:
    """Every floating node output of ``proto`` in one ONNX Runtime run."""
    import onnxruntime as ort

    from gate.runners.ort_session import mark_outputs

    marked = mark_outputs(proto, [out for node in proto.graph.node for out in node.output if out])
    session = ort.InferenceSession(marked.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, dict(zip(built.input_names, built.arrays, strict=True)))
    return {n: np.asarray(v, np.float64) for n, v in zip(names, values, strict=True)
            if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating)}


def first_changed_module(unfaulted: onnx.ModelProto, faulted: onnx.ModelProto, built) -> str | None:
    """The first module (in the order calls return) whose output the graph fault changes: each module
    call's output is found among the unchanged graph's values by value (the closest within float32
    rounding; a value is the output of the one module closest to it: a Conv whose BatchNorm the
    optimizer folded has no value of its own, though at its random-init identity the BatchNorm's is
    within 1e-5 of it), and that value compared between the two graphs' runs. None: nothing moved."""
    before, after = _all_values(unfaulted, built), _all_values(faulted, built)
    by_shape: dict[tuple, list[str]] = {}
    for name, v in before.items():
        by_shape.setdefault(v.shape, []).append(name)
    claims: list[tuple[str, str, float]] = []  # (module, value, error), in the order calls return
    for module, out in _module_outputs(built):
        best = None
        for name in by_shape.get(out.shape, []):  # in the order nodes make them
            err = float(np.linalg.norm(before[name] - out) / (np.linalg.norm(out) or 1.0))
            if err > SAME:
                continue
            # As close as the closest so far (within float32 noise): of equal values (a MatMul and the
            # Add of a zero bias after it) the module's output is the last one made.
            if best is None or err <= 2 * best[1]:
                best = (name, err if best is None else min(err, best[1]))
        if best is not None:
            claims.append((module, *best))
    owner: dict[str, tuple[float, int]] = {}
    for i, (_, value, err) in enumerate(claims):
        if value not in owner or err < owner[value][0] * 0.5:  # of equal claims, the first call keeps it
            owner[value] = (err, i)
    for i, (module, value, _) in enumerate(claims):
        if owner[value][1] != i or value not in after:
            continue
        a, b = before[value], after[value]
        if a.shape != b.shape or np.linalg.norm(a - b) > 1e-6 * (np.linalg.norm(a) or 1.0):
            return module
    return None

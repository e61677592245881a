"""Where a graph-side fault is, found without the metadata the gate reads (the exporter's
``name_scopes``): by value.

- An initializer's module: the module whose parameter or buffer the initializer is, its values equal
  to that tensor or to its transpose (the exporter stores a Linear's weight transposed for MatMul).
  Initializers no tensor equals (a Conv with its BatchNorm folded in) belong to no single module.
- A node's module: the module whose output (in float64, as the gate's reference) is closest to the node's output in an ONNX
  Runtime run of the unchanged graph (within float32 rounding; of equal ones, the first in the order
  calls return), as the model-side truth (``truth.py``) takes the first module whose output changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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
    """(initializer, module): a weight about ``depth`` of the way through the graph, in the order
    nodes first use it, that is exactly one module's (and whose values ``keep`` accepts)."""
    owned = weights_in_graph(proto, model)
    if keep is not None:
        owned = {i.name: owned[i.name] for i in proto.graph.initializer
                 if i.name in owned and keep(numpy_helper.to_array(i))}
    order: list[str] = []
    for node in proto.graph.node:
        order += [i for i in node.input if i in owned and i not in order]
    if not order:
        raise ValueError("no initializer of the graph is one of the model's tensors")
    chosen = order[min(int(len(order) * depth), len(order) - 1)]
    return chosen, module_of_tensor(owned[chosen])


def node_module(path: Path, value: str, built) -> str | None:
    """The module (of the order calls return) whose output, computed in float64 as the gate's
    reference computes it, is closest to ``value``'s in an ONNX Runtime run of the graph at ``path``."""
    import onnxruntime as ort

    from gate.model.build import inference_mode
    from gate.runners.reference import as_float64

    proto = onnx.load(str(path))
    proto.graph.output.append(onnx.helper.make_tensor_value_info(value, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run([value], dict(zip(built.input_names, built.arrays, strict=True)))[0].astype(np.float64)
    calls: list[tuple[str, list[torch.Tensor]]] = []
    with built.fresh():
        model, inputs = as_float64(built.module, built.inputs)
        for n, m in model.named_modules():
            if n:
                m.register_forward_hook(lambda _m, _i, out, n=n: calls.append((n, [t.clone() for t in _tensors(out)])))
        with inference_mode():
            model(*inputs)
    best: tuple[float, int, str] | None = None
    for order, (name, outs) in enumerate(calls):
        for t in outs:
            if tuple(t.shape) != got.shape or not t.is_floating_point():
                continue
            ref = t.detach().numpy()
            err = float(np.linalg.norm(ref - got) / (np.linalg.norm(ref) or 1.0))
            # The closest output: a module whose output differs by a little more than rounding (a
            # BatchNorm at its random-init identity after a Conv) is another value. Equal outputs
            # (an activation and the block that returns it): the first to return.
            if err <= SAME and (best is None or err < best[0] * 0.5):
                best = (err, order, name)
    return best[2] if best is not None else None

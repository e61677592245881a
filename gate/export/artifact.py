"""A prebuilt ONNX file (``artifact = "build/model.onnx"``) gated against the PyTorch model instead of
the gate's export. Final outputs are always compared; intermediates are mapped from the dynamo
exporter's ``name_scopes``, else TorchScript node names (neither tells a module's calls apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx

from gate.core.failure import ModelError
from gate.core.status import ErrorStatus
from gate.export import layermap, saved
from gate.export.exporter import Exported

if TYPE_CHECKING:
    from gate.model.build import BuiltModel


def _calls_per_module(built: BuiltModel) -> dict[str, int]:
    """How often each module runs in one forward (forward pre-hooks, one run)."""
    import torch

    from gate.model.build import unshared
    from gate.model.torch_hooks import hooked

    counts: dict[str, int] = {}
    handles = [m.register_forward_pre_hook(lambda *_, q=q: counts.__setitem__(q, counts.get(q, 0) + 1))
               for q, m in hooked(built.module) if q]
    try:
        with torch.no_grad():
            built.module(*unshared(built.inputs))
    finally:
        for h in handles:
            h.remove()
    return counts


def load(built: BuiltModel) -> Exported:
    spec = built.spec
    try:
        proto = onnx.load(str(spec.artifact))
        onnx.checker.check_model(proto)  # before anything reads it; whether it loads: once saved
    except FileNotFoundError:
        raise ModelError(f"model `{spec.name}`: artifact `{spec.artifact}` does not exist (build it before the gate "
                         "runs)", ErrorStatus.EXPORT_FAIL) from None
    except Exception as exc:
        raise ModelError(f"model `{spec.name}`: artifact `{spec.artifact}` is not a valid ONNX model "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})",
                         ErrorStatus.EXPORT_FAIL) from None
    names = {n for n, _ in built.module.named_modules() if n}
    stacks = layermap.scope_stacks(proto, names)
    if stacks is None:
        stacks = layermap.torchscript_stacks(proto, names)
    try:
        shapes = layermap.value_shapes(onnx.shape_inference.infer_shapes(proto))
    except Exception:  # noqa: BLE001 - best effort: without shapes every candidate value matches
        shapes = layermap.value_shapes(proto)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
    ambiguous = frozenset(q for q, n in _calls_per_module(built).items() if n > 1)
    result = Exported(proto, "artifact", None, opset, layermap.call_values(proto, stacks), shapes,
                      layermap.available_values(proto), ambiguous=ambiguous, as_shipped=True)
    result.save(proto)  # the bundle's own copy
    assert result.path is not None  # saved
    why = saved.refusal(result.path, result.proto, full_check=False)  # checked as read
    if why is not None:
        raise ModelError(f"model `{spec.name}`: artifact `{spec.artifact}` does not load: {why}",
                         ErrorStatus.EXPORT_FAIL)
    return result

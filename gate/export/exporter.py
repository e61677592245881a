"""Export a built model to ONNX and map its values back to module calls.

The dynamo exporter is the default; when it fails, the TorchScript exporter is tried and
the reason is kept for the report. The model is exported unoptimized first, so every module
still owns its nodes while the map is built, then optimized: the optimized graph is what
ships and what ONNX Runtime runs.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from dataclasses import dataclass

import onnx
import torch

from gate.errors import ModelError
from gate.export import layermap
from gate.export.layermap import CallKey, CallValues
from gate.model.build import BuiltModel, inference_mode

DEFAULT_OPSET = 18


@dataclass
class Exported:
    proto: onnx.ModelProto  # the graph that ships (optimized, then transformed)
    exporter: str
    fallback: str | None  # why dynamo was not used, when it was not
    opset: int
    calls: dict[CallKey, CallValues]  # from the unoptimized graph
    shapes: dict[str, tuple | None]
    available: set[str]  # values that exist in the optimized graph
    shipped: set[str] | None = None  # values that exist after the transform (None: no transform)
    ambiguous: frozenset[str] = frozenset()  # modules whose calls the graph cannot tell apart
    as_shipped: bool = False  # mapped on the shipped graph itself (BatchNorms already fused)


@contextlib.contextmanager
def _quiet():
    """The exporters print progress and deprecation chatter; keep the gate's output readable."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _dynamic(built: BuiltModel) -> tuple | None:
    """The declared dynamic dimensions, one entry per forward argument, for torch.export."""
    declared = built.spec.dynamic_shapes
    if not declared:
        return None
    return tuple(dict(declared[name]) if name in declared else None for name in built.input_names)


def export(built: BuiltModel) -> Exported:
    spec = built.spec
    opset = spec.opset or DEFAULT_OPSET
    fallback = None
    if spec.exporter == "dynamo":
        try:
            return _dynamo(built, opset)
        except ModelError:
            raise
        except Exception as exc:  # any exporter failure: try the other exporter, keep the reason
            fallback = f"dynamo exporter failed: {type(exc).__name__}: {_first_line(exc)}"
    try:
        result = _torchscript(built, opset)
    except Exception as exc:
        reason = f"; {fallback}" if fallback else ""
        raise ModelError(
            f"model `{spec.name}`: export failed: {type(exc).__name__}: {_first_line(exc)}{reason}", "EXPORT_FAIL"
        ) from None
    result.fallback = fallback
    return result


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _first_line(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    first = text[0].strip() if text else ""
    # The dynamo exporter's own first line says which step failed; the cause is chained.
    cause = exc.__cause__
    if cause is not None and "step" in first.lower():
        inner = _ANSI.sub("", str(cause)).strip().splitlines()
        first = f"{first.split('.')[0]}: {inner[0].strip() if inner else type(cause).__name__}"
    return first[:300]


def _dynamo(built: BuiltModel, opset: int) -> Exported:
    with inference_mode(), _quiet():
        program = torch.onnx.export(
            built.module, built.inputs, dynamo=True, optimize=False, opset_version=opset,
            input_names=built.input_names, verbose=False, dynamic_shapes=_dynamic(built),
        )
        raw = program.model_proto
        fx_stacks = _fx_stacks(program.exported_program)
        stacks = layermap.dynamo_stacks(raw, fx_stacks)
        calls = layermap.call_values(raw, stacks)
        shapes = layermap.value_shapes(_inferred(raw))
        program.optimize()
        proto = program.model_proto
    _check(proto, built.spec.name)
    return Exported(proto, "dynamo", None, opset, calls, shapes, layermap.available_values(proto))


def _fx_stacks(exported_program) -> dict[str, list[CallKey]]:
    """FX node name -> module calls (qualified name, call index), from ``nn_module_stack``."""
    stacks: dict[str, list[CallKey]] = {}
    for node in exported_program.graph.nodes:
        stack = node.meta.get("nn_module_stack")
        if not stack:
            continue
        calls = []
        for key, value in stack.items():
            _, _, index = key.rpartition("@")
            qual = value[0] if isinstance(value, tuple) else str(value)
            calls.append((qual, int(index) if index.isdigit() else 0))
        stacks[node.name] = calls
    return stacks


def _torchscript(built: BuiltModel, opset: int) -> Exported:
    buffer = io.BytesIO()
    with inference_mode(), _quiet():
        axes = {name: {d: label for d, label in dims.items()} for name, dims in built.spec.dynamic_shapes.items()}
        torch.onnx.export(
            built.module, built.inputs, buffer, dynamo=False, opset_version=min(opset, 20),
            input_names=built.input_names, do_constant_folding=True, dynamic_axes=axes or None,
        )
    proto = onnx.load_from_string(buffer.getvalue())
    proto = onnx.shape_inference.infer_shapes(proto)
    names = {n for n, _ in built.module.named_modules() if n}
    stacks = [[("", 0)] + s for s in layermap.torchscript_stacks(proto, names)]
    calls = layermap.call_values(proto, stacks)
    _check(proto, built.spec.name)
    # Constant folding already happened inside torch.onnx.export: the map is built on the
    # graph that ships, so folded modules simply own no nodes.
    return Exported(proto, "torchscript", None, opset, calls, layermap.value_shapes(proto),
                    layermap.available_values(proto), as_shipped=True)


def _check(proto: onnx.ModelProto, name: str) -> None:
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as exc:
        raise ModelError(f"model `{name}`: exported ONNX graph is invalid: {_first_line(exc)}",
                         "EXPORT_FAIL") from None


def _inferred(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Shape inference fills the value_info the exporter left out; best effort."""
    try:
        return onnx.shape_inference.infer_shapes(proto)
    except Exception:
        return proto

"""Export a built model to ONNX and map its values back to module calls.

The dynamo exporter is the default; when it fails or its graph does not load (``saved.refusal``),
TorchScript is tried and the reason kept. The map is built on the unoptimized export (every module
still owns its nodes); the optimized graph ships, saved at once and then held without its weights.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx
import torch

from gate.core.failure import ModelError
from gate.core.runs import OnnxSite
from gate.core.status import ErrorStatus
from gate.export import layermap, rewriter, saved, signatures, structure
from gate.export.layermap import CallKey, CallValues
from gate.model.build import BuiltModel, inference_mode, unshared

if TYPE_CHECKING:
    import onnx_ir as ir

DEFAULT_OPSET = 18
TORCHSCRIPT_OPSET = 20  # the newest opset the TorchScript exporter writes


@dataclass
class Exported:
    proto: onnx.ModelProto  # the exported graph (optimized), without external weights
    exporter: str
    fallback: str | None  # why dynamo was not used, when it was not
    opset: int
    calls: dict[CallKey, CallValues]  # from the unoptimized graph
    shapes: dict[str, tuple[Any, ...] | None]
    available: set[str]  # values that exist in the optimized graph
    ambiguous: frozenset[str] = frozenset()  # modules whose calls the graph cannot tell apart
    outputs: dict[signatures.OutputKey, OnnxSite] = field(default_factory=dict)  # recorded call outputs
    as_shipped: bool = False  # mapped on the shipped graph itself (BatchNorms already fused)
    path: Path | None = None  # the graph's file (its external data beside it)
    # The dynamo exporter's graph before optimization, its weights left out (``structure.capture``):
    # (the serialized graph, initializer -> state-dict name, ``Structure.renamed``); the values in it.
    structure: tuple[bytes, dict[str, str], dict[str, str]] | None = None
    unoptimized: set[str] | None = None
    identities: dict[str, str] = field(default_factory=dict)  # ``layermap.identity_sources`` of that graph
    # hold the files
    folders: list[tempfile.TemporaryDirectory[str]] = field(default_factory=list, repr=False)

    def save(self, full: onnx.ModelProto) -> None:
        """Make ``full`` (weights in memory) the exported graph: written to a fresh folder."""
        folder = tempfile.TemporaryDirectory(prefix="parity-gate-export-")
        self.folders.append(folder)
        self.path = saved.save_proto(full, Path(folder.name) / saved.MODEL)
        self.proto = saved.load_graph(self.path)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters print progress and deprecation chatter; keep the gate's output readable."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with (warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()),
              contextlib.redirect_stderr(io.StringIO())):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """The TorchScript exporter's C++ side prints the whole IR graph to the process's stdout when a
    conversion fails ("Torch IR graph at exception"), past any Python-level redirect: the file
    descriptor itself points at the null device meanwhile."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout to protect
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def _dynamic(built: BuiltModel) -> tuple[Any, ...] | None:
    """The declared dynamic dimensions, one entry per forward argument, for torch.export."""
    declared = built.spec.dynamic_shapes
    if not declared:
        return None
    return tuple(dict(declared[name]) if name in declared else None for name in built.input_names)


def export(built: BuiltModel, recordable: tuple[str, ...] | None = None) -> Exported:
    """The model exported (the default exporter, else TorchScript's, saying why); ``recordable``: the
    modules whose call signature the trace can record, where the probe found them (``signatures``)."""
    spec = built.spec
    opset = spec.opset or DEFAULT_OPSET
    fallback, tried = None, []
    if spec.exporter == "dynamo":
        try:
            return _dynamo(built, opset, recordable)
        except Exception as exc:  # any exporter failure, or a graph that does not load: try the other
            fallback = (f"dynamo graph failed to load: {exc}" if isinstance(exc, Refused)
                        else f"dynamo exporter failed: {type(exc).__name__}: {_first_line(exc)}")
            tried.append(f"dynamo: {_reason(exc)}")
    try:
        result = _torchscript(built, opset)
    except Exception as exc:
        # One line, the default exporter's reason first: every row the failure leaves unchecked shows it.
        tried.append(f"TorchScript: {_reason(exc)}")
        raise ModelError.of(f"model `{spec.name}`: export failed ({'; '.join(tried)})", ErrorStatus.EXPORT_FAIL,
                            exc) from None
    result.fallback = fallback
    return result


class Refused(Exception):
    """An exporter's graph that does not load (``saved.refusal``), saying why."""


class OpsetNotMet(Exception):
    """An exporter's graph in another opset than the one asked."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _line(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    return text[0].strip() if text else ""


def _root(exc: BaseException) -> BaseException:
    """The innermost cause: the dynamo exporter wraps the reason in its own errors (the step, the
    node it was translating)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _reason(exc: BaseException) -> str:
    """Why an exporter failed, in one line: its innermost cause (``NotImplementedError: aten_histc
    with min == max (0.0) is not supported in this export path.``)."""
    if isinstance(exc, Refused):
        return f"graph failed to load: {exc}"[:300]
    root = _root(exc)
    return f"{type(root).__name__}: {_line(root) or '(no message)'}"[:300]


def _first_line(exc: BaseException) -> str:
    """The exception's first line; the dynamo exporter's says which step failed, and the cause follows."""
    first = _line(exc)
    if _root(exc) is not exc and "step" in first.lower():
        first = f"{first.split('.')[0]}: {_reason(exc)}"
    return first[:300]


def _dynamo(built: BuiltModel, opset: int, recordable: tuple[str, ...] | None) -> Exported:
    with inference_mode(), _quiet():
        program, signed = _onnx_program(built, opset, recordable)
        assert program is not None and program.exported_program is not None  # dynamo=True: both are made
        wrote = program.model.opset_imports.get("", opset)
        if wrote != opset:  # its version converter gave up and kept the opset it exports in: not what ships
            raise OpsetNotMet(f"it wrote opset {wrote}, not the {opset} asked (an op has no form there)")
        fx_stacks = _fx_stacks(program.exported_program)
        raw = _weightless(program.model)
        outputs = {} if signed is None else (
            signatures.resolve(signed, program.exported_program, layermap.available_values(raw)))
        program.exported_program = signed = None  # the FX graphs are no longer needed; their memory goes now
        calls = layermap.call_values(raw, layermap.dynamo_stacks(raw, fx_stacks))
        try:  # shape inference fills the value_info the exporter left out; best effort
            shapes = layermap.value_shapes(onnx.shape_inference.infer_shapes(raw))
        except Exception:
            shapes = layermap.value_shapes(raw)
        unoptimized, identities = layermap.available_values(raw), layermap.identity_sources(raw)
        del raw, fx_stacks
        captured = structure.capture(program.model, built.module)  # before the optimizer folds the weights
        program.optimize()
        folder = tempfile.TemporaryDirectory(prefix="parity-gate-export-")
        path = Path(folder.name) / saved.MODEL
        _save_ir(program.model, path)
    del program
    gc.collect()  # the exporter's copies of the weights go before any runtime starts
    proto = _checked(path, folder)
    return Exported(proto, "dynamo", None, opset, calls, shapes, layermap.available_values(proto), path=path,
                    outputs=outputs, folders=[folder], structure=captured, unoptimized=unoptimized,
                    identities=identities)


def bound(built: BuiltModel, stored: structure.Structure) -> Exported:
    """The export of ``built`` from a stored structure of its code: its weights bound in and the optimizer
    run (``structure.bind``); the structure's layer map, values the optimizer folded away marked folded.
    ``structure.Unbindable`` when they do not fit or the graph does not load (a fresh export follows)."""
    with inference_mode(), _quiet():
        path, folder = structure.bind(stored, built.module, _save_ir)
    gc.collect()
    try:
        proto = _checked(path, folder)
    except Refused as exc:  # a fresh export decides between the exporters
        raise structure.Unbindable(f"the bound graph failed to load: {exc}") from None
    return Exported(proto, "dynamo", None, stored.opset, {}, {}, layermap.available_values(proto), path=path,
                    folders=[folder], unoptimized=None)


def _onnx_program(built: BuiltModel, opset: int, recordable: tuple[str, ...] | None
                  ) -> tuple[torch.onnx.ONNXProgram | None, signatures.Signed | None]:
    """The unoptimized ONNX program, converted from a trace that recorded each module call's outputs
    (``signatures``) where it can be made; else as ``torch.onnx.export`` traces it itself."""
    dynamic = _dynamic(built)
    options: dict[str, Any] = dict(dynamo=True, optimize=False, opset_version=opset, input_names=built.input_names, verbose=False,
                   dynamic_shapes=dynamic)
    signed = signatures.trace(built, dynamic, recordable)
    if signed is not None:
        try:
            return torch.onnx.export(signed.program, unshared(built.inputs), **options), signed
        except Exception:  # noqa: BLE001 - the plain export below reports the model's own failure
            built.restore()
    return torch.onnx.export(built.module, unshared(built.inputs), **options), None


def _weightless(model: ir.Model) -> onnx.ModelProto:
    """The IR model as a proto without its large initializers (they become typed graph inputs, so
    shape inference still sees them): the layer map needs the nodes, never the weights."""
    import onnx_ir as ir

    graph = model.graph
    everything = dict(graph.initializers)  # restored in this order: the shipped graph's bytes depend on it
    large = {name: v for name, v in everything.items()
             if v.const_value is not None and v.const_value.nbytes > saved.INLINE_TENSOR_BYTES}
    for name in large:
        graph.initializers.pop(name)
    try:
        proto = ir.serde.serialize_model(model)
    finally:
        graph.initializers.clear()
        graph.initializers.update(everything)
    proto.graph.input.extend(ir.serde.serialize_value(v) for v in large.values())
    return proto


def _save_ir(model: ir.Model, path: Path) -> None:
    """``model`` saved; the graphs the optimizer matched are let go of (``rewriter.forget``)."""
    import onnx_ir as ir

    _c_order_writes(model)
    ir.save(model, str(path), external_data=saved.DATA, size_threshold_bytes=saved.INLINE_TENSOR_BYTES)
    rewriter.forget()


def _c_order_writes(model: ir.Model) -> None:
    """Each strided NumPy initializer written in C order from a copy of its own, made as it is written
    and freed after: the optimizer's folded transposes are strided views (most of a transformer's
    weights), which NumPy writes element by element, an order of magnitude slower; copied all at once
    they would add their bytes to the peak. ``tofile`` writes C order either way: the same bytes."""
    import numpy as np
    import onnx_ir as ir

    class COrder(ir.Tensor):  # type: ignore[type-arg]
        def tofile(self, file: Any) -> None:
            ir.Tensor(np.ascontiguousarray(self.raw), self.dtype, shape=self.shape).tofile(file)

    for value in model.graph.initializers.values():
        tensor = value.const_value
        if not isinstance(tensor, ir.Tensor):
            continue
        raw = tensor.raw
        if isinstance(raw, np.ndarray) and raw.dtype.isbuiltin and not raw.flags.c_contiguous:
            value.const_value = COrder(raw, tensor.dtype, shape=tensor.shape, name=tensor.name,
                                       doc_string=tensor.doc_string,
                                       metadata_props=dict(tensor.metadata_props))


def _fx_stacks(exported_program: torch.export.ExportedProgram) -> dict[str, list[CallKey]]:
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
    if opset > TORCHSCRIPT_OPSET:
        raise OpsetNotMet(f"it exports opsets up to {TORCHSCRIPT_OPSET}, not {opset}")
    buffer = io.BytesIO()
    with inference_mode(), _quiet(), _native_stdout_silenced():
        axes = {name: {d: label for d, label in dims.items()} for name, dims in built.spec.dynamic_shapes.items()}
        torch.onnx.export(
            built.module, unshared(built.inputs), buffer, dynamo=False, opset_version=opset,
            input_names=built.input_names, do_constant_folding=True, dynamic_axes=axes or None,
        )
    proto = onnx.load_from_string(buffer.getvalue())
    del buffer
    proto = onnx.shape_inference.infer_shapes(proto)
    names = {n for n, _ in built.module.named_modules() if n}
    calls = layermap.call_values(proto, layermap.torchscript_stacks(proto, names))
    # Constant folding already happened inside torch.onnx.export: the map is built on the
    # graph that ships, so folded modules simply own no nodes.
    result = Exported(proto, "torchscript", None, opset, calls, layermap.value_shapes(proto),
                      layermap.available_values(proto), as_shipped=True)
    result.save(proto)
    assert result.path is not None  # saved
    _checked(result.path, result.folders[-1])
    return result


def _checked(path: Path, folder: tempfile.TemporaryDirectory[str]) -> onnx.ModelProto:
    """The graph at ``path`` (``saved.load_graph``), loaded before it is trusted: ``Refused`` (its
    ``folder`` removed) where it does not load."""
    graph = saved.load_graph(path)
    why = saved.refusal(path, graph)
    if why is not None:
        folder.cleanup()
        raise Refused(why)
    return graph


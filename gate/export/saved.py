"""The shipped graph as files: ``model.onnx`` and its weights in ``model.onnx.data``. Written apart, the
weights are never serialized into one protobuf (twice their size in memory; nor can one pass 2 GiB);
everything after the export works on the graph without them (``load_graph``), and copies with values
marked as outputs point at the same weights file. No torch here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import onnx

MODEL = "model.onnx"
DATA = "model.onnx.data"
INLINE_TENSOR_BYTES = 1024  # small tensors (shapes, scalars) stay in the graph for shape inference


def weight_bytes(proto: onnx.ModelProto, folder: Path) -> int:
    """The bytes of the graph's own initializers (not its subgraphs'), in it or in a data file."""
    return sum(region(t, folder)[2] if t.data_location == onnx.TensorProto.EXTERNAL else len(t.raw_data)
               for t in proto.graph.initializer)


def _initializers(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """A graph's initializers and those of the graphs its nodes hold (If, Loop, Scan bodies)."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _initializers(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _initializers(g)


def save_proto(proto: onnx.ModelProto, path: Path) -> Path:
    """Write ``proto`` (with its weights in memory) as ``path``, its weights in ``DATA`` beside it. onnx
    moves them: ``proto`` is left pointing at the file. The tensors are marked here, as
    ``save_as_external_data`` would (by ``sys.getsizeof``, so the files keep their bytes): that option
    refuses to write where a file named ``DATA`` exists in the working directory, such as a repository
    whose shipped graph is ``model.onnx`` beside ``model.onnx.data``."""
    for t in _initializers(proto.graph):
        if t.HasField("raw_data") and sys.getsizeof(t.raw_data) >= INLINE_TENSOR_BYTES:
            onnx.external_data_helper.set_external_data(t, DATA)
    onnx.save_model(proto, str(path))
    return path


def load_graph(path: Path) -> onnx.ModelProto:
    """The graph without the weights of its external data (their references only)."""
    return onnx.load(str(path), load_external_data=False)


def load_model(path: Path) -> onnx.ModelProto:
    """The graph with its weights in memory, read from the data files beside it, as if saved in one file.
    Not ``onnx.load``: it refuses a data file with a second hard link, and the store links what it holds."""
    proto = load_graph(path)
    for t in external(proto):
        file, offset, length = region(t, path.parent)
        with open(file, "rb") as f:
            f.seek(offset)
            data = f.read(length)
        if len(data) != length:
            raise ValueError(f"{file.name}: external data ends {length - len(data)} bytes short")
        t.raw_data = data
        del t.external_data[:]
        t.ClearField("data_location")
    return proto


# Opset domains ONNX Runtime itself defines ops in; a graph that imports another, defined by none of
# its functions, uses a custom op library that only the provider registering it can load.
ORT_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})


def refusal(path: Path, graph: onnx.ModelProto, full_check: bool = True) -> str | None:
    """Why the graph at ``path`` would not load, in one line; None where it loads. ``full_check`` runs the
    full ONNX checker first (its shape inference refuses what the plain one passes; a transform's tools
    write graphs it refuses and ONNX Runtime loads). Then a minimal ONNX Runtime CPU session; a missing
    CPU kernel or a custom op domain is left to the provider that runs it. Both read the path."""
    if full_check:
        try:
            onnx.checker.check_model(str(path), full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
            return f"ONNX checker: {first_line(exc)}"
    defined = ORT_DOMAINS | {f.domain for f in graph.functions}
    if any(o.domain not in defined for o in graph.opset_import):
        return None
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from onnxruntime.capi.onnxruntime_pybind11_state import (  # type: ignore[import-untyped]
            NotImplemented as NoKernel,
        )
    except ImportError:  # an environment without ONNX Runtime runs none of its providers either
        return None
    so = ort.SessionOptions()
    so.log_severity_level, so.intra_op_num_threads, so.enable_cpu_mem_arena = 3, 1, False
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.disable_prepacking", "1")
    try:
        ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
    except NoKernel:
        return None
    except Exception as exc:  # noqa: BLE001 - whatever ONNX Runtime refuses the graph for, in its words
        # not the temporary folder's name
        return f"ONNX Runtime: {first_line(exc).replace(str(path), path.name)}"
    return None


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip()[:300] if lines else type(exc).__name__


def external(proto: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The tensors whose bytes are in a data file: initializers and attributes, in subgraphs too."""
    return [t for t in _tensors(proto.graph) if t.data_location == onnx.TensorProto.EXTERNAL]


def _tensors(g: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from g.initializer
    for node in g.node:
        for a in node.attribute:
            yield from ([a.t] if a.HasField("t") else []) + list(a.tensors)
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _tensors(sub)


def region(t: onnx.TensorProto, folder: Path) -> tuple[Path, int, int]:
    """Where an external tensor's bytes are: (file, offset, length; to the file's end if unsaid)."""
    info = {e.key: e.value for e in t.external_data}
    file, offset = folder / location(t), int(info.get("offset", 0))
    return file, offset, int(info["length"]) if "length" in info else file.stat().st_size - offset


def location(t: onnx.TensorProto) -> str:
    """An external tensor's data file, a path inside the graph's folder (``ValueError`` where it is not:
    a graph from a store or a bundle is read, never trusted to name files)."""
    name = next((e.value for e in t.external_data if e.key == "location"), "")
    if not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"tensor `{t.name}`: external data location {name!r} is not a file beside the graph")
    return name


def data_files(proto: onnx.ModelProto) -> list[str]:
    """The external data files ``proto`` refers to (relative locations, in first-use order)."""
    return list(dict.fromkeys(location(t) for t in external(proto)))


def _share(source: Path, dest: Path) -> None:
    """``dest`` is ``source``'s bytes: a hard link where the file system allows, else a copy."""
    if dest.exists():
        dest.unlink()
    try:
        os.link(source, dest)
    except OSError:
        shutil.copyfile(source, dest)


def copy_model(source: Path, folder: Path) -> Path:
    """``source`` and its external data as ``folder/model.onnx`` (the data shared, not copied,
    where the file system allows)."""
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / MODEL
    if source.resolve() == dest.resolve():
        return dest
    for name in data_files(load_graph(source)):
        _share(source.parent / name, folder / name)
    shutil.copyfile(source, dest)
    return dest


@contextlib.contextmanager
def marked_source(proto: onnx.ModelProto, model: Path | None) -> Iterator[str | bytes]:
    """``proto`` (``model`` with intermediates marked as outputs) as a session opens it: its bytes, or a
    file beside ``model`` where it has external data (found in place, never copied), removed on exit."""
    if not data_files(proto):
        yield proto.SerializeToString()
        return
    path = (model or Path(".")).parent / f".marked-{os.getpid()}.onnx"
    path.write_bytes(proto.SerializeToString())
    try:
        yield str(path)
    finally:
        path.unlink(missing_ok=True)

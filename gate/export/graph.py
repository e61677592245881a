"""What the baseline records of the shipped ONNX graph: a digest, its op types, the precision it
computes in and its dynamic dimensions."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import onnx

from gate.export import saved

CHUNK = 16 * 2**20
# Weights a graph was saved with in one file, before they always went apart (``file_digest``).
ONE_FILE_MAX = 64 * 2**20


def graph_digest(proto: onnx.ModelProto) -> str:
    """sha256 of the graph without what names rather than computes: node metadata and doc strings (stack
    traces name source files) and node names (numbered from a counter of the process)."""
    return hashlib.sha256(_bare(proto).SerializeToString(deterministic=True)).hexdigest()


def file_digest(path: Path) -> str:
    """``graph_digest`` of a saved graph, its external weights streamed, never loaded whole. A graph with
    at most ``ONE_FILE_MAX`` bytes of weights gets the digest of the self-contained file it was saved as
    before its weights went apart (``_one_file``; baselines record it). A larger one: sha256 over the bare
    graph (external tensors without their location/offset/length, which depend on the file's layout),
    then each external tensor's bytes in initializer order."""
    proto = saved.load_graph(path)
    tensors = saved.external(proto)
    if not tensors:
        return graph_digest(proto)
    bare = _bare(proto)
    if saved.weight_bytes(proto, path.parent) <= ONE_FILE_MAX:  # what decided whether they went apart
        return _one_file(bare, path)
    for t in saved.external(bare):
        del t.external_data[:]
    h = hashlib.sha256(b"parity-gate graph digest: external data v1\0")
    h.update(bare.SerializeToString(deterministic=True))
    for t in tensors:
        _stream(h, *saved.region(t, path.parent))
    return h.hexdigest()


def _stream(h: Any, file: Path, offset: int, length: int) -> None:
    with open(file, "rb") as f:
        f.seek(offset)
        while length > 0:
            block = f.read(min(CHUNK, length))
            if not block:
                raise ValueError(f"{file.name}: external data ends {length} bytes short")
            h.update(block)
            length -= len(block)


Piece = bytes | tuple[Path, int, int]  # serialized bytes, or an external tensor's (file, offset, length)


def _one_file(bare: onnx.ModelProto, path: Path) -> str:
    """``graph_digest`` of ``bare`` with each external tensor's bytes in place (as ``raw_data``), the weights
    streamed: deterministic serialization writes a message's set fields in field-number order, so the bytes
    are assembled field by field. Unknown fields are written last, where this could not place them: a graph
    with any is loaded whole."""
    known = onnx.ModelProto()
    known.CopyFrom(bare)
    known.DiscardUnknownFields()
    if known.ByteSize() != bare.ByteSize():
        return graph_digest(saved.load_model(path))
    h = hashlib.sha256()
    for piece in _pieces(bare, path.parent):
        if isinstance(piece, bytes):
            h.update(piece)
        else:
            _stream(h, *piece)
    return h.hexdigest()


def _pieces(msg: Any, folder: Path) -> list[Piece]:
    if not _holds_external(msg):
        return [msg.SerializeToString(deterministic=True)]
    fields: list[tuple[Any, Any]] = msg.ListFields()
    if isinstance(msg, onnx.TensorProto):  # external: its bytes go where raw_data would be
        fields = [(f, v) for f, v in fields if f.name not in ("external_data", "data_location")]
        fields = sorted([*fields, (_RAW_DATA, saved.region(msg, folder))], key=lambda fv: fv[0].number)
    out: list[Piece] = []
    for field, value in fields:
        if field is _RAW_DATA:
            out += [_key(field.number) + _varint(value[2]), value]
        elif field.message_type is not None:
            for item in (value if field.is_repeated else [value]):
                body = _pieces(item, folder)
                size = sum(len(b) if isinstance(b, bytes) else b[2] for b in body)
                out += [_key(field.number) + _varint(size), *body]
        else:
            one = type(msg)()
            if field.is_repeated:
                getattr(one, field.name).extend(value)
            else:
                setattr(one, field.name, value)
            out.append(one.SerializeToString(deterministic=True))
    return out


_RAW_DATA = onnx.TensorProto.DESCRIPTOR.fields_by_name["raw_data"]


def _holders() -> frozenset[str]:
    """The message types that can hold a tensor, at any depth (a graph's nodes' attributes hold graphs)."""
    seen: dict[str, Any] = {}
    todo = [onnx.ModelProto.DESCRIPTOR]
    while todo:
        d = todo.pop()
        if d.full_name not in seen:
            seen[d.full_name] = d
            todo += [f.message_type for f in d.fields if f.message_type is not None]
    held = {onnx.TensorProto.DESCRIPTOR.full_name}
    while True:
        more = {name for name, d in seen.items()
                if any(f.message_type and f.message_type.full_name in held for f in d.fields)} - held
        if not more:
            return frozenset(held)
        held |= more


_HOLDERS = _holders()


def _holds_external(msg: Any) -> bool:
    if isinstance(msg, onnx.TensorProto):
        return msg.data_location == onnx.TensorProto.EXTERNAL
    return msg.DESCRIPTOR.full_name in _HOLDERS and any(
        _holds_external(item) for field, value in msg.ListFields()
        if field.message_type is not None and field.message_type.full_name in _HOLDERS
        for item in (value if field.is_repeated else [value]))


def _key(number: int) -> bytes:
    return _varint(number << 3 | 2)  # a length-delimited field


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bare(proto: onnx.ModelProto) -> onnx.ModelProto:
    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    bare.doc_string = ""
    del bare.metadata_props[:]
    _bare_graph(bare.graph)
    return bare


def _bare_graph(g: onnx.GraphProto) -> None:
    g.doc_string = ""
    for node in g.node:
        del node.metadata_props[:]
        node.doc_string = ""
        node.name = ""
        for attr in node.attribute:  # the bodies of If, Loop and Scan
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _bare_graph(sub)


def op_types(proto: onnx.ModelProto) -> list[str]:
    return sorted({n.op_type for n in proto.graph.node})


# Op types that compute in integers: a graph with them is quantized (int8).
QUANTIZED_OPS = frozenset({"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv", "DynamicQuantizeLinear",
                           "QuantizeLinear", "DequantizeLinear", "MatMulIntegerToFloat", "QAttention", "QGemm"})


def precision(proto: onnx.ModelProto) -> str:
    """What a transformed graph computes in: ``int8`` when it has quantized ops, ``float16`` (or
    ``bfloat16``) when most of its floating-point weights are, else ``float32``. (A single Cast
    in a float32 graph does not make it a float16 graph.)"""
    if {n.op_type for n in proto.graph.node} & QUANTIZED_OPS:
        return "int8"
    counts = Counter(t.data_type for t in proto.graph.initializer)
    for half, name in ((onnx.TensorProto.FLOAT16, "float16"), (onnx.TensorProto.BFLOAT16, "bfloat16")):
        if counts.get(half, 0) > counts.get(onnx.TensorProto.FLOAT, 0):
            return name
    return "float32"


_HALF = {onnx.TensorProto.FLOAT16: "float16", onnx.TensorProto.BFLOAT16: "bfloat16"}
_INT8 = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
MAX_LOWERED = 1000  # items a run records (a fully quantized graph is said by its class, not item by item)


def lowered(proto: onnx.ModelProto) -> list[str]:
    """What computes below float32, one item each, worded stably across exports: int8 weights and the
    quantized op reading them, int8 activations, float16/bfloat16 weights, casts to them. An item one
    side has is a precision change the config did not ask for (``gate.verdict.precision``)."""
    inits = {t.name: t for t in proto.graph.initializer}
    out: dict[str, None] = {}
    for node in proto.graph.node:
        if node.op_type in QUANTIZED_OPS:
            weights = [i for i in node.input
                       if i in inits and inits[i].data_type in _INT8 and len(inits[i].dims)]
            for w in weights:
                out[f"int8 weight `{w}` through {node.op_type}"] = None
            if not weights and node.op_type in ("DynamicQuantizeLinear", "QuantizeLinear"):
                out[f"int8 activations through {node.op_type} (node `{node.name or node.output[0]}`)"] = None
        elif node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to in _HALF:
                out[f"cast to {_HALF[to]} (node `{node.name or node.output[0]}`)"] = None
    for t in proto.graph.initializer:
        if t.data_type in _HALF and len(t.dims):
            out[f"{_HALF[t.data_type]} weight `{t.name}`"] = None
    return list(out)[:MAX_LOWERED]


def dynamic_dims(proto: onnx.ModelProto) -> dict[str, dict[str, str]]:
    """The graph inputs' dimensions without a fixed size, by input and index: ``{"x": {"0": "batch"}}``."""
    out: dict[str, dict[str, str]] = {}
    for vi in proto.graph.input:
        dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else []
        named = {str(i): (d.dim_param or "?") for i, d in enumerate(dims) if not d.HasField("dim_value")}
        if named:
            out[vi.name] = named
    return out

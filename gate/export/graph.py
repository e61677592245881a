"""What the baseline records of the shipped ONNX graph: a digest, its op types, the precision it
computes in and its dynamic dimensions."""

from __future__ import annotations

import hashlib

import onnx


def graph_digest(proto: onnx.ModelProto) -> str:
    """sha256 of the graph without node metadata and doc strings: the exporter's stack traces
    name source files, which differ between checkouts of the same code."""
    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    bare.doc_string = ""
    del bare.metadata_props[:]
    bare.graph.doc_string = ""
    for node in bare.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    return hashlib.sha256(bare.SerializeToString(deterministic=True)).hexdigest()


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
    counts: dict[int, int] = {}
    for t in proto.graph.initializer:
        counts[t.data_type] = counts.get(t.data_type, 0) + 1
    for half, name in ((onnx.TensorProto.FLOAT16, "float16"), (onnx.TensorProto.BFLOAT16, "bfloat16")):
        if counts.get(half, 0) > counts.get(onnx.TensorProto.FLOAT, 0):
            return name
    return "float32"


def dynamic_dims(proto: onnx.ModelProto) -> dict[str, dict[str, str]]:
    """The graph inputs' dimensions without a fixed size, by input and index: ``{"x": {"0": "batch"}}``."""
    out: dict[str, dict[str, str]] = {}
    for vi in proto.graph.input:
        dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else []
        named = {str(i): (d.dim_param or "?") for i, d in enumerate(dims) if not d.HasField("dim_value")}
        if named:
            out[vi.name] = named
    return out

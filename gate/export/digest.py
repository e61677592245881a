"""What the baseline records of the shipped ONNX graph: a digest and its op types."""

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

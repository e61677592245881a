"""Capture the marked values of a large graph one segment at a time.

When the marked values do not fit the capture budget at once, the graph is cut in execution order
into segments whose marked values each fit; each runs once as a graph of its own (same external
weights file), fed what earlier segments produced, so the whole graph runs once in all rather than
once per chunk of values. Cuts fall right after a node that produces a marked value, so what ONNX
Runtime may fuse inside a segment is what it may fuse in the whole graph with every value marked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx


def chunks(values: Sequence[str], sizes: Mapping[str, int], budget: int | None) -> list[list[str]]:
    """Split marked values, in order, into the fewest runs of at most ``budget`` bytes (a larger value
    alone), as even as those allow: a run's peak is its chunk, so 2,100 MB is two runs of 1,050 MB."""
    if not budget:
        return [list(values)] if values else []
    greedy = _greedy(values, sizes, budget)
    if len(greedy) < 2:
        return greedy
    n, per = len(greedy), sum(sizes.get(v, 0) for v in values) / len(greedy)
    even: list[list[str]] = [[] for _ in range(n)]
    start = 0
    for name in values:  # each value goes to the run its middle byte falls in
        size = sizes.get(name, 0)
        even[min(n - 1, int((start + size / 2) // per)) if per > 0 else 0].append(name)
        start += size
    even = [c for c in even if c]
    fits = all(len(c) == 1 or sum(sizes.get(v, 0) for v in c) <= budget for c in even)
    return even if fits and len(even) == n else greedy


def _greedy(values: Sequence[str], sizes: Mapping[str, int], budget: int) -> list[list[str]]:
    out: list[list[str]] = []
    current: list[str] = []
    used = 0
    for name in values:
        size = sizes.get(name, 0)
        if current and used + size > budget:
            out.append(current)
            current, used = [], 0
        current.append(name)
        used += size
    if current:
        out.append(current)
    return out


@dataclass
class Segment:
    nodes: range  # indices into graph.node
    marked: list[str]  # marked values its nodes produce, in execution order
    inputs: list[str] = field(default_factory=list)  # values it reads from the feed or earlier segments
    keep: list[str] = field(default_factory=list)  # values it produces that a later segment reads
    initializers: list[str] = field(default_factory=list)


def reads(node: onnx.NodeProto) -> list[str]:
    """The values ``node`` reads, in order: its inputs, then the outer-scope names its subgraphs use."""
    names = dict.fromkeys(n for n in node.input if n)
    for attr in node.attribute:
        for graph in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            names.update(dict.fromkeys(_outer(graph)))
    return list(names)


def _outer(graph: onnx.GraphProto) -> list[str]:
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: dict[str, None] = {}
    for node in graph.node:
        used.update(dict.fromkeys(n for n in reads(node) if n not in local))
        local.update(node.output)
    return [n for n in used if n not in local]


def plan(graph: onnx.GraphProto, values: Sequence[str], sizes: Mapping[str, int], budget: int,
         feed: Iterable[str]) -> list[Segment] | None:
    """Segments cut as ``chunks`` cuts the values; None when a marked value is no node's output."""
    produced = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    if any(v not in produced for v in values):
        return None
    ordered = sorted(dict.fromkeys(values), key=lambda v: produced[v])  # stable: same node keeps its order
    ends = sorted({produced[part[-1]] + 1 for part in chunks(ordered, sizes, budget)})
    ends[-1] = len(graph.node)
    starts = [0, *ends[:-1]]
    at = {i: k for k, (a, b) in enumerate(zip(starts, ends, strict=True)) for i in range(a, b)}
    segments = [Segment(range(a, b), [v for v in ordered if a <= produced[v] < b]) for a, b in zip(starts, ends,
                                                                                                   strict=True)]
    weights = {t.name for t in graph.initializer} | {t.values.name for t in graph.sparse_initializer}
    given = set(feed)
    for i, node in enumerate(graph.node):
        seg = segments[at[i]]
        for name in reads(node):
            if name in given or (name in produced and produced[name] < seg.nodes.start):
                _add(seg.inputs, name)
            elif name in weights and name not in produced:
                _add(seg.initializers, name)
    for name in last_reader(segments):  # every value a segment reads from an earlier one
        if name in produced and name not in given:
            segments[at[produced[name]]].keep.append(name)
    return [s for s in segments if len(s.nodes)]


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def last_reader(segments: Sequence[Segment]) -> dict[str, int]:
    """For each value a segment reads from outside itself, the last segment that reads it."""
    return {name: k for k, s in enumerate(segments) for name in s.inputs}


def model(proto: onnx.ModelProto, seg: Segment, types: Mapping[str, onnx.TypeProto], index: int) -> onnx.ModelProto:
    """``seg`` as a graph of its own, reading the original model's external weights file."""
    g = proto.graph
    out = onnx.ModelProto(ir_version=proto.ir_version, producer_name=proto.producer_name)
    out.opset_import.extend(proto.opset_import)
    out.functions.extend(proto.functions)
    sub = out.graph
    sub.name = f"{g.name or 'graph'}-segment-{index}"
    sub.node.extend(g.node[i] for i in seg.nodes)
    wanted = set(seg.initializers)
    sub.initializer.extend(t for t in g.initializer if t.name in wanted)
    sub.sparse_initializer.extend(t for t in g.sparse_initializer if t.values.name in wanted)
    for name in seg.inputs:
        sub.input.append(onnx.ValueInfoProto(name=name, type=types[name]))
    infos = {vi.name: vi for vi in [*g.value_info, *g.output]}
    for name in dict.fromkeys([*seg.marked, *seg.keep]):
        sub.output.append(infos[name] if name in infos else onnx.ValueInfoProto(name=name))
    inside = {o for i in seg.nodes for o in g.node[i].output}
    sub.value_info.extend(vi for vi in g.value_info if vi.name in inside)
    return out


def tensor_type(value: np.ndarray) -> onnx.TypeProto:
    """The ONNX type of a fed array (its shape as it is: the run is concrete)."""
    return onnx.helper.make_tensor_type_proto(onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)

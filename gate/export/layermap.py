"""Map ONNX values back to PyTorch module calls.

Calls come from the dynamo exporter's node metadata (``name_scopes``; the exported program's
``nn_module_stack`` tells the k-th call apart), else TorchScript node names. A call whose outputs the
export recorded (``signatures``) takes those values; any other is matched by shape among the values it
exposes, only where that leaves one choice, else it is absent with candidates a capture can tell apart
(``pick``). The map is built on the unoptimized graph: a layer whose value the optimizer removed is
reported folded rather than matched to a neighbour's value.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import onnx

from gate.core.runs import MAX_CANDIDATES, OnnxSite
from gate.core.status import SiteKind
from gate.core.target import ROUNDING
from gate.fingerprint import Fingerprint, relative_error

CallKey = tuple[str, int]  # (module qualified name, 0-based call index)
_SUFFIX = re.compile(r"^(.*)_(\d+)$")


@dataclass
class CallValues:
    """The values one module call exposes, in production order, with the node count."""

    values: list[str] = field(default_factory=list)
    nodes: int = 0
    op_types: set[str] = field(default_factory=set)


def _scopes(node: onnx.NodeProto) -> list[str]:
    """The node's ``name_scopes`` metadata (module paths, outermost first); [] where it has none."""
    text = next((p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.name_scopes"), None)
    try:
        return eval_list(text) if text else []
    except ValueError:
        return []


def dynamo_stacks(proto: onnx.ModelProto, fx_stacks: dict[str, list[CallKey]]) -> list[list[CallKey]]:
    """For every node of ``proto``, the module calls it belongs to (outermost first)."""
    innermost = [_scopes(node)[-1:] for node in proto.graph.node]  # the FX node's name, where it has one
    return [list(fx_stacks.get(s[0], [])) if s and s[0] else [] for s in innermost]


def scope_stacks(proto: onnx.ModelProto, module_names: set[str]) -> list[list[CallKey]] | None:
    """Module calls from the dynamo exporter's ``name_scopes`` alone (a prebuilt graph, without the
    exported program): every scope is call 0, so a module called twice cannot be told apart.
    None when no node carries the metadata."""
    stacks, seen = [], False
    for node in proto.graph.node:
        parsed = _scopes(node)
        seen = seen or bool(parsed)
        stacks.append([("", 0)] + [(q, 0) for q in parsed[1:] if q in module_names])
    return stacks if seen else None


def eval_list(text: str) -> list[str]:
    """Parse the exporter's ``['', 'layer1', ...]`` metadata without eval()."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError(text)
    return re.findall(r"'((?:[^'\\]|\\.)*)'", text[1:-1])


def torchscript_stacks(proto: onnx.ModelProto, module_names: set[str]) -> list[list[CallKey]]:
    """Module calls from TorchScript-exporter node names (``/layer1/layer1.0/conv1/Conv``), the root's
    first: each component is a path from the nearest enclosing scope that is not a container (a
    Sequential or ModuleList has no scope of its own); ``<attr>_<k>`` names the k-th call of a module."""
    stacks = []
    for node in proto.graph.node:
        parts = [p for p in node.name.split("/")[:-1] if p]
        stack: list[CallKey] = [("", 0)]
        for part in parts:
            found = _component([q for q, _ in stack], part, module_names)
            if found is None:
                break
            stack.append(found)
        stacks.append(stack)
    return stacks


def _component(enclosing: list[str], part: str, module_names: set[str]) -> CallKey | None:
    """The module call a node-name component names: (qualified name, call index)."""
    last = enclosing[-1]
    m = _SUFFIX.match(part)
    for path, index in ((part, 0), *([(m.group(1), int(m.group(2)))] if m else [])):
        for base in reversed(enclosing):
            qual = f"{base}.{path}" if base else path
            if qual in module_names and (not last or qual.startswith(last + ".")):
                return qual, index
    return None


def call_values(proto: onnx.ModelProto, stacks: list[list[CallKey]]) -> dict[CallKey, CallValues]:
    """The values each module call exposes to the rest of the graph."""
    graph = proto.graph
    members: dict[CallKey, set[int]] = defaultdict(set)
    for index, stack in enumerate(stacks):
        for key in stack:
            members[key].add(index)
    consumers: dict[str, set[int]] = defaultdict(set)
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name:
                consumers[name].add(index)
    graph_outputs = {o.name for o in graph.output}
    result: dict[CallKey, CallValues] = {}
    for key, nodes in members.items():
        cv = CallValues(nodes=len(nodes))
        for index in sorted(nodes):
            node = graph.node[index]
            cv.op_types.add(node.op_type)
            for name in node.output:
                users = consumers.get(name, ())
                # Exposed: used outside the call, a graph output, or used by nobody at all (an
                # output the caller ignores, such as attention weights; the optimizer drops it).
                if name and (name in graph_outputs or not users or any(c not in nodes for c in users)):
                    cv.values.append(name)
        result[key] = cv
    return result


def value_shapes(proto: onnx.ModelProto) -> dict[str, tuple[int | str, ...] | None]:
    """Static shapes of values where known (symbolic dims as their names)."""
    shapes: dict[str, tuple[int | str, ...] | None] = {}
    for vi in list(proto.graph.value_info) + list(proto.graph.output) + list(proto.graph.input):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            shapes[vi.name] = None
            continue
        shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim)
    return shapes


def available_values(proto: onnx.ModelProto) -> set[str]:
    """Values that exist at run time in ``proto`` (node outputs and graph inputs)."""
    names = {i.name for i in proto.graph.input}
    for node in proto.graph.node:
        names.update(o for o in node.output if o)
    return names


def identity_sources(proto: onnx.ModelProto) -> dict[str, str]:
    """Each value an ``Identity`` node makes (a ``clone()``, a ``contiguous()``) -> the value it copies,
    chains followed: the same numbers, which the optimizer keeps while it drops the copy."""
    copies = {n.output[0]: n.input[0] for n in proto.graph.node
              if n.op_type == "Identity" and n.domain in ("", "ai.onnx") and n.input and n.output}
    out = {}
    for value in copies:
        source, seen = copies[value], {value}
        while source in copies and source not in seen:
            seen.add(source)
            source = copies[source]
        out[value] = source
    return out


def through_identities(sites: dict[str, OnnxSite], identities: Mapping[str, str]) -> dict[str, OnnxSite]:
    """The layer map with each layer whose value is a copy given the value copied (``identity_sources``)."""
    return {name: OnnxSite(SiteKind.VALUE, identities[s.value])
            if s.kind == SiteKind.VALUE and s.value is not None and s.value in identities else s
            for name, s in sites.items()}


def shape_matches(onnx_shape: tuple[int | str, ...] | None, torch_shape: tuple[int, ...]) -> bool:
    if onnx_shape is None:
        return True
    if len(onnx_shape) != len(torch_shape):
        return False
    return all(not isinstance(a, int) or a == b for a, b in zip(onnx_shape, torch_shape, strict=True))


AMBIGUOUS = "called more than once, and the graph's metadata cannot tell its calls apart"
FOLDED = "removed by the exporter's optimizer (fused into a neighbouring node, or unused)"
NOT_RETURNED = "the exported call returned no such element"
UNSCOPED = "the graph's nodes name no module (no name-scope metadata): nothing maps them to layers"


def assign(records: list[Any], calls: dict[CallKey, CallValues], shapes: dict[str, tuple[Any, ...] | None],
           available: set[str], ambiguous: frozenset[str] = frozenset(),
           outputs: dict[tuple[str, int, str], OnnxSite] | None = None) -> dict[str, OnnxSite]:
    """Assign each captured layer (``gate.model.torch_hooks.LayerOutput``) its ONNX value: root outputs
    are the graph outputs in order, recorded calls take their ``outputs``, others go by ``_by_shape``."""
    outputs = outputs or {}
    recorded = {(module, call) for module, call, _ in outputs}
    by_call: dict[CallKey, list[Any]] = defaultdict(list[Any])
    for rec in records:
        by_call[(rec.module, rec.call)].append(rec)
    result: dict[str, OnnxSite] = {}
    scoped = any(module for module, _ in calls)  # some node names a module below the root
    for key, recs in by_call.items():
        if key[0] == "":
            for index, rec in enumerate(recs):
                result[rec.name] = OnnxSite(SiteKind.OUTPUT, output=index)
            continue
        if key[0] in ambiguous:
            for rec in recs:
                result[rec.name] = OnnxSite(SiteKind.ABSENT, reason=AMBIGUOUS)
            continue
        if key in recorded:
            absent = OnnxSite(SiteKind.ABSENT, reason=NOT_RETURNED)
            matched = {rec.name: outputs.get((key[0], key[1], rec.element), absent) for rec in recs}
        else:
            matched = _by_shape(recs, calls.get(key), shapes)
        for rec in recs:
            result[rec.name] = _site(rec, matched.get(rec.name), calls.get(key), available, shapes, result,
                                     scoped)
    return result


def _site(rec, found: OnnxSite | None, cv: CallValues | None, available: set[str], shapes: dict[str, Any],
          done: dict[str, OnnxSite], scoped: bool) -> OnnxSite:
    if found is not None and found.kind == "value":
        if not shape_matches(shapes.get(found.value), tuple(rec.fp.shape)):
            return OnnxSite(SiteKind.ABSENT, reason="the value computing it has another shape in the graph")
        return (OnnxSite(SiteKind.VALUE, found.value) if found.value in available
                else OnnxSite(SiteKind.FOLDED, found.value, reason=FOLDED))
    if rec.alias_of is not None and rec.alias_of in done:
        return done[rec.alias_of]  # the very tensor an earlier layer produced
    if found is not None:
        return found  # absent, with the reason the export gave
    if cv is None or cv.nodes == 0:
        return OnnxSite(SiteKind.ABSENT, reason=UNSCOPED if not scoped else
                        "no ONNX node (identity at inference, or folded into constants)")
    return OnnxSite(SiteKind.ABSENT, reason="no exposed ONNX value matches this output's shape")


def _by_shape(recs, cv: CallValues | None, shapes: dict[str, Any]) -> dict[str, OnnxSite]:
    """Outputs of an unrecorded call: an element takes the one exposed value its shape allows that no
    other element's shape allows; else it is absent, with those values as candidates (``pick``). A
    pass-through (``alias_of``) takes the earlier layer's site instead."""
    candidates = list(cv.values) if cv else []
    recs = [r for r in recs if r.alias_of is None]
    allowed = {r.name: [v for v in candidates if shape_matches(shapes.get(v), tuple(r.fp.shape))] for r in recs}
    claims: dict[str, int] = defaultdict(int)
    for values in allowed.values():
        for v in values:
            claims[v] += 1
    out: dict[str, OnnxSite] = {}
    for rec in recs:
        values = allowed[rec.name]
        if len(values) == 1 and claims[values[0]] == 1:
            out[rec.name] = OnnxSite(SiteKind.VALUE, values[0])
        elif values:
            rivals = max(claims[v] for v in values)
            out[rec.name] = OnnxSite(SiteKind.ABSENT, reason=f"{len(values)} value{'s' if len(values) > 1 else ''} the call "
                                     f"exposes {'have' if len(values) > 1 else 'has'} this output's shape"
                                     f"{f' (as {rivals} of its outputs do)' if rivals > 1 else ''}; the export "
                                     "did not record which computes it",
                                     candidates=tuple(values) if len(values) <= MAX_CANDIDATES else ())
    return out


@dataclass(frozen=True)
class Pick:
    """What a capture's numbers say of an absent layer's candidate values (``OnnxSite.candidates``)."""

    value: str | None  # the one candidate that holds torch's numbers; None: none or several do
    captured: int  # candidates the capture fingerprinted (the others are not in the graph that ran)
    shaped: int  # of those, how many have the layer's shape when run (a symbolic shape allows others)
    within: int  # of those, how many are within ``noise`` of torch's output
    precision: str  # whose rounding ``noise`` is
    noise: float

    def reason(self, shape: tuple[int, ...]) -> str:
        """Why the layer stays absent (``value`` is None)."""
        if not self.captured:
            return "none of the values its shape allows is in the graph that ran"
        if not self.shaped:
            return f"no value the call exposes has shape {list(shape)} when run"
        head = (f"{self.shaped} candidate value{'s' * (self.shaped != 1)} of shape {list(shape)}; "
                f"{self.within or 'none'} within {self.precision} noise ({self.noise:.0e}) of torch's output")
        if self.within:
            return f"{head}: they hold the same numbers, and the export did not record which computes it"
        return (f"{head} on this provider: not judged here; a fault in it is named at the next judged layer "
                "that reads it")


def pick(candidates: Mapping[str, Fingerprint], torch: Fingerprint, precision: str) -> Pick:
    """The one candidate within ``precision``'s rounding of ``torch`` (the layer's output in the same
    run); none or several, and none is taken. A value the provider computes wrongly is thus not found,
    and a fault there is named at the next judged layer that reads it."""
    label = precision if precision in ROUNDING else "float32"  # quantized: the finest (missed, never guessed)
    noise = ROUNDING[label]
    shaped = [v for v, fp in candidates.items() if tuple(fp.shape) == tuple(torch.shape)]
    close = [v for v in shaped if relative_error(candidates[v], torch) <= noise]
    return Pick(close[0] if len(close) == 1 else None, len(candidates), len(shaped), len(close), label, noise)


FUSED = "fused with the BatchNorm after it (the graph holds their joint output)"


def fold_batchnorms(records, sites: dict[str, OnnxSite]) -> dict[str, OnnxSite]:
    """A graph mapped as shipped (TorchScript export, prebuilt file) fused each BatchNorm into the Conv
    before it, whose node produces the BatchNorm's output: give that value to the BatchNorm and call the
    Conv folded, as the map of an unoptimized graph would."""
    out = dict(sites)
    for before, rec in zip(records, records[1:], strict=False):
        site, prev = out.get(rec.name), out.get(before.name)
        if (rec.type.startswith("BatchNorm") and site is not None and site.kind == "absent"
                and prev is not None and prev.kind == "value"):
            out[rec.name] = prev
            out[before.name] = OnnxSite(SiteKind.FOLDED, prev.value, reason=FUSED)
    return out

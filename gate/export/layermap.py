"""Map ONNX values back to PyTorch module calls.

The dynamo exporter records on every node the module path stack it came from
(``pkg.torch.onnx.name_scopes``) and the FX node it lowers (the last entry of that stack);
the exported program's ``nn_module_stack`` tells the k-th call of a module apart
(``L__self___act@1``). A call whose outputs the export recorded (``signatures``) takes the
values that compute them; any other call's outputs are matched by shape among the values it
*exposes* (its nodes produce them, a node outside the call or the graph output consumes them),
only where the shape leaves one choice.

The map is built on the unoptimized graph, where every module still has its nodes. The
shipped graph is the optimized one: a value that did not survive optimization belongs to a
module that was folded into a neighbour (a Conv whose BatchNorm was folded into it keeps
no output of its own; the fused node produces the BatchNorm's value). Such layers are
reported as folded rather than matched to the neighbour's value.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import onnx

from gate.core.runs import OnnxSite

CallKey = tuple[str, int]  # (module qualified name, 0-based call index)
_SUFFIX = re.compile(r"^(.*)_(\d+)$")


@dataclass
class CallValues:
    """The values one module call exposes, in production order, with the node count."""

    values: list[str] = field(default_factory=list)
    nodes: int = 0
    op_types: set[str] = field(default_factory=set)


def _meta(node: onnx.NodeProto, key: str) -> str | None:
    for prop in node.metadata_props:
        if prop.key == key:
            return prop.value
    return None


def dynamo_stacks(proto: onnx.ModelProto, fx_stacks: dict[str, list[CallKey]]) -> list[list[CallKey]]:
    """For every node of ``proto``, the module calls it belongs to (outermost first)."""
    stacks = []
    for node in proto.graph.node:
        scopes = _meta(node, "pkg.torch.onnx.name_scopes")
        fx_name = None
        if scopes:
            try:
                parsed = eval_list(scopes)
                fx_name = parsed[-1] if parsed else None
            except ValueError:
                fx_name = None
        stacks.append(list(fx_stacks.get(fx_name, [])) if fx_name else [])
    return stacks


def scope_stacks(proto: onnx.ModelProto, module_names: set[str]) -> list[list[CallKey]] | None:
    """Module calls from the dynamo exporter's ``name_scopes`` alone (a prebuilt graph, without the
    exported program): every scope is call 0, so a module called twice cannot be told apart.
    None when no node carries the metadata."""
    stacks, seen = [], False
    for node in proto.graph.node:
        scopes = _meta(node, "pkg.torch.onnx.name_scopes")
        try:
            parsed = eval_list(scopes) if scopes else []
        except ValueError:
            parsed = []
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
    """Module calls from TorchScript-exporter node names (``/layer1/layer1.0/conv1/Conv``).

    That exporter names the k-th call of a module ``<attr>_<k>``; a component that is not a
    module but strips to one is read as such a call.
    """
    stacks = []
    for node in proto.graph.node:
        parts = [p for p in node.name.split("/")[:-1] if p]
        stack: list[CallKey] = []
        qual = ""
        for part in parts:
            index = 0
            name = part.split(".")[-1]
            candidate = f"{qual}.{name}" if qual else name
            if candidate not in module_names:
                m = _SUFFIX.match(name)
                if m and (f"{qual}.{m.group(1)}" if qual else m.group(1)) in module_names:
                    candidate = f"{qual}.{m.group(1)}" if qual else m.group(1)
                    index = int(m.group(2))
                else:
                    break
            qual = candidate
            stack.append((qual, index))
        stacks.append(stack)
    return stacks


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


def shape_matches(onnx_shape: tuple[int | str, ...] | None, torch_shape: tuple[int, ...]) -> bool:
    if onnx_shape is None:
        return True
    if len(onnx_shape) != len(torch_shape):
        return False
    return all(not isinstance(a, int) or a == b for a, b in zip(onnx_shape, torch_shape, strict=True))


AMBIGUOUS = "called more than once, and the graph's metadata cannot tell its calls apart"
FOLDED = "removed by the exporter's optimizer (fused into a neighbouring node, or unused)"
NOT_RETURNED = "the exported call returned no such element"


def assign(records, calls: dict[CallKey, CallValues], shapes: dict[str, tuple | None],
           available: set[str], ambiguous: frozenset[str] = frozenset(),
           outputs: dict[tuple[str, int, str], OnnxSite] | None = None) -> dict[str, OnnxSite]:
    """Assign each captured layer (``gate.runners.torch_hooks.LayerOutput``) its ONNX value.

    Root outputs are the graph outputs, in order. A call whose outputs the export recorded
    (``outputs``, from ``signatures``: the value that computes each element) takes those. Any
    other call's outputs are matched by shape among the values the call exposes, only where the
    shape leaves one choice; else they are absent, and say why.
    """
    outputs = outputs or {}
    recorded = {(module, call) for module, call, _ in outputs}
    by_call: dict[CallKey, list] = defaultdict(list)
    for rec in records:
        by_call[(rec.module, rec.call)].append(rec)
    result: dict[str, OnnxSite] = {}
    for key, recs in by_call.items():
        if key[0] == "":
            for index, rec in enumerate(recs):
                result[rec.name] = OnnxSite("output", output=index)
            continue
        if key[0] in ambiguous:
            for rec in recs:
                result[rec.name] = OnnxSite("absent", reason=AMBIGUOUS)
            continue
        if key in recorded:
            absent = OnnxSite("absent", reason=NOT_RETURNED)
            matched = {rec.name: outputs.get((key[0], key[1], rec.element), absent) for rec in recs}
        else:
            matched = _by_shape(recs, calls.get(key), shapes)
        for rec in recs:
            result[rec.name] = _site(rec, matched.get(rec.name), calls.get(key), available, shapes, result)
    return result


def _site(rec, found: OnnxSite | None, cv: CallValues | None, available: set[str], shapes: dict,
          done: dict[str, OnnxSite]) -> OnnxSite:
    if found is not None and found.kind == "value":
        if not shape_matches(shapes.get(found.value), tuple(rec.fp.shape)):
            return OnnxSite("absent", reason="the value computing it has another shape in the graph")
        return OnnxSite("value", found.value) if found.value in available else \
            OnnxSite("folded", found.value, reason=FOLDED)
    if rec.alias_of is not None and rec.alias_of in done:
        return done[rec.alias_of]  # the very tensor an earlier layer produced
    if found is not None:
        return found  # absent, with the reason the export gave
    if cv is None or cv.nodes == 0:
        return OnnxSite("absent", reason="no ONNX node (identity at inference, or folded into constants)")
    return OnnxSite("absent", reason="no exposed ONNX value matches this output's shape")


def _by_shape(recs, cv: CallValues | None, shapes: dict) -> dict[str, OnnxSite]:
    """Outputs of a call whose signature was not recorded, by shape among the values it exposes:
    an element takes a value only when it is the one element of its shape and that value the one
    exposed value of the shape. Two of a kind would be a guess: absent, saying so."""
    candidates = list(cv.values) if cv else []
    out: dict[str, OnnxSite] = {}
    for rec in recs:
        shape = tuple(rec.fp.shape)
        values = [v for v in candidates if shape_matches(shapes.get(v), shape)]
        twins = sum(1 for r in recs if tuple(r.fp.shape) == shape)
        if len(values) == 1 and twins == 1:
            out[rec.name] = OnnxSite("value", values[0])
        elif values:
            out[rec.name] = OnnxSite("absent", reason=f"{len(values)} values the call exposes have this output's "
                                     f"shape{f' (as {twins} of its outputs do)' if twins > 1 else ''}; the export "
                                     "did not record which computes it")
    return out


FUSED = "fused with the BatchNorm after it (the graph holds their joint output)"


def fold_batchnorms(records, sites: dict[str, OnnxSite]) -> dict[str, OnnxSite]:
    """A graph mapped as shipped (TorchScript export, prebuilt file) fused each BatchNorm into the
    Conv before it: the Conv's node, still named after the Conv, produces the BatchNorm's output,
    and the BatchNorm owns no node. Give that value to the BatchNorm and call the Conv folded, as
    the map of an unoptimized graph would."""
    out = dict(sites)
    for before, rec in zip(records, records[1:], strict=False):
        site, prev = out.get(rec.name), out.get(before.name)
        if (rec.type.startswith("BatchNorm") and site is not None and site.kind == "absent"
                and prev is not None and prev.kind == "value"):
            out[rec.name] = prev
            out[before.name] = OnnxSite("folded", prev.value, reason=FUSED)
    return out

"""What each module call returns, as the exporter computes it: the ONNX value of every output element.

Matching outputs by shape crosses wires when two share a shape (CLIP's ``text_embeds`` and
``image_embeds``), so ``torch.export`` records each module call's signature
(``preserve_module_call_signature``) and its FX nodes are followed by provenance (``from_node``) to the
ONNX nodes that compute them. Only calls that take and return tensors and plain scalars, with one
structure, can be recorded (``torch_hooks.CallSpecs``, else ``recordable``). The signatures are dropped
before the ONNX exporter runs, so it converts the very program a plain export traces. An output that
cannot be followed with certainty is reported absent, with the reason.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from gate.core.runs import OnnxSite
from gate.core.status import SiteKind
from gate.model.build import BuiltModel, inference_mode, unshared
from gate.model.torch_hooks import CallSpecs, flatten

OutputKey = tuple[str, int, str]  # (module qualified name, 0-based call, element suffix "[0]", "[logits]")

# Ops that leave their input's value as it is: when the decomposition removes one, its output is its input.
_PASS_THROUGH = {"aten.dropout.default", "aten.feature_dropout.default", "aten.alpha_dropout.default",
                 "aten.to.dtype", "aten.to.device", "aten.to.dtype_layout", "aten._to_copy.default",
                 "aten.alias.default", "aten.detach.default", "aten.clone.default", "aten.contiguous.default",
                 "aten.lift_fresh_copy.default", "aten.type_as.default"}


def recordable(module: torch.nn.Module, inputs: tuple[Any, ...]) -> tuple[str, ...]:
    """Modules (qualified names) whose signature ``torch.export`` can record, from a forward with
    hooks (``torch_hooks.CallSpecs``)."""
    specs = CallSpecs()
    handles = specs.hooks(module)
    try:
        with inference_mode():
            module(*unshared(inputs))
    finally:
        for h in handles:
            h.remove()
    return specs.recordable()


@dataclass
class Signed:
    """A program traced with its calls' signatures: per call, each output element's FX node (None:
    not a tensor node), in the traced (pre-decomposition) graph."""

    program: torch.export.ExportedProgram
    outputs: dict[tuple[str, int], list[tuple[str, str | None]]] = field(default_factory=dict)


def trace(built: BuiltModel, dynamic, known: tuple[str, ...] | None = None) -> Signed | None:
    """The program ``torch.onnx`` would trace (non-strict ``torch.export`` while
    ``torch.onnx.is_in_onnx_export()`` holds) with the signatures of every recordable call (``known``: the
    probe's; else found by a forward of its own); None when that fails (the plain export follows)."""
    try:
        from torch.onnx import _flags
        from torch.onnx._internal.exporter import _capture_strategies, _dynamic_shapes
        from torch.onnx._internal.exporter._flags import set_onnx_exporting_flag
    except ImportError:  # another torch: no signatures, shapes only
        return None
    names = known if known is not None else _found(built, set_onnx_exporting_flag)
    if not names:
        return None

    @set_onnx_exporting_flag
    def export() -> torch.export.ExportedProgram:
        dims, _ = _dynamic_shapes.convert_str_to_export_dim(dynamic)
        with (_capture_strategies._patch_dynamic_shape_rnn_decompositions(dims),
              torch.fx.experimental._config.patch(backed_size_oblivious=True)):
            return torch.export.export(
                built.module, unshared(built.inputs), dynamic_shapes=dims, strict=False, preserve_module_call_signature=names,
                prefer_deferred_runtime_asserts_over_guards=getattr(
                    _flags, "PREFER_DEFERRED_RUNTIME_ASSERTS_OVER_GUARDS", False))

    try:
        program = export()
    except Exception:  # noqa: BLE001 - a module the check let through after all: the plain export, shapes only
        built.restore()
        return None
    signed = Signed(program, _outputs(program))
    for entry in program.module_call_graph:
        if entry.fqn:
            entry.signature = None
    return signed


def _found(built: BuiltModel, flagged) -> tuple[str, ...]:
    """The recordable modules, from a forward of their own while the export's flag holds."""
    try:
        names: tuple[str, ...] = flagged(recordable)(built.module, built.inputs)
        return names
    except Exception:  # noqa: BLE001 - the export reports the model's own failure
        return ()
    finally:
        built.restore()  # what that forward cached must not become a constant of the graph


def _outputs(program: torch.export.ExportedProgram) -> dict[tuple[str, int], list[tuple[str, str | None]]]:
    """Per call, (element suffix, FX node name) in the order the capture names them: placeholders
    unflattened into the recorded structure and flattened again by ``torch_hooks.flatten``."""
    out = {}
    for entry in program.module_call_graph:
        if not entry.fqn or entry.signature is None:
            continue
        qual, _, index = entry.fqn.partition("@")
        node_of: dict[int, str | None] = {}
        leaves = []
        for arg in entry.signature.outputs:
            leaf = torch.empty(0)
            node_of[id(leaf)] = arg.name if type(arg).__name__ == "TensorArgument" else None
            leaves.append(leaf)
        try:
            value = pytree.tree_unflatten(leaves, entry.signature.out_spec)
        except Exception:  # noqa: BLE001 - a structure that cannot be rebuilt: its elements stay unmatched
            continue
        out[(qual, int(index) if index.isdigit() else 0)] = [(element, node_of.get(id(t))) for element, t in flatten(value)]
    return out


def _origin(node: torch.fx.Node, graph_id: int) -> str | None:
    """The traced graph's node ``node`` was made from, following its provenance back."""
    history = node.meta.get("from_node") or []
    source = history[-1] if history else None
    while source is not None and source.graph_id != graph_id:
        source = source.from_node[-1] if source.from_node else None
    return source.name if source is not None else None


def resolve(signed: Signed, decomposed: torch.export.ExportedProgram, values: set[str]) -> dict[OutputKey, OnnxSite]:
    """Each recorded output element's ONNX value, or why it has none. ``decomposed`` is the program
    the ONNX exporter converted (its node names are the ONNX value names), ``values`` those names."""
    traced = {n.name: n for n in signed.program.graph.nodes}
    groups: dict[str, list[torch.fx.Node]] = defaultdict(list)
    graph_id = id(signed.program.graph)
    for node in decomposed.graph.nodes:
        if node.op == "call_function":
            origin = _origin(node, graph_id)
            if origin is not None:
                groups[origin].append(node)
    live = _live(signed.program.graph)
    return {(qual, call, element): _site(name, traced, groups, values, live)
            for (qual, call), elements in signed.outputs.items() for element, name in elements}


def _live(graph: torch.fx.Graph) -> set[str]:
    """Nodes the graph's outputs depend on: the others are dropped as dead code."""
    todo = [n for n in graph.nodes if n.op == "output"]
    seen: set[str] = set()
    while todo:
        node = todo.pop()
        if node.name not in seen:
            seen.add(node.name)
            todo.extend(node.all_input_nodes)
    return seen


def _site(name: str | None, traced: dict[str, Any], groups: dict[str, Any], values: set[str],
          live: set[str]) -> OnnxSite:
    seen = set()
    while name is not None and name not in seen:
        seen.add(name)
        node = traced.get(name)
        if node is None or node.op != "call_function":
            return OnnxSite(SiteKind.ABSENT, reason="an input or a weight of the model, returned as it is: no ONNX "
                            "node computes it")
        if node.target is operator.getitem:  # an element of a multi-output op (topk, split, lstm)
            return _element(node, groups, values)
        group = groups.get(name)
        if group:
            return _made_by(group, values)
        if str(node.target) in _PASS_THROUGH and node.args and isinstance(node.args[0], torch.fx.Node):
            name = node.args[0].name  # removed as a no-op: the value is its input's
            continue
        if name not in live:
            return OnnxSite(SiteKind.ABSENT, reason="not computed in the exported graph (nothing the model returns "
                            "uses it)")
        return OnnxSite(SiteKind.ABSENT, reason=f"the exporter's decompositions removed `{node.target}`, which "
                        "computes it")
    return OnnxSite(SiteKind.ABSENT, reason="not a tensor the exported graph computes")


def _element(node: torch.fx.Node, groups: dict[str, Any], values: set[str]) -> OnnxSite:
    """``op(...)[k]``: the k-th element of the same op in the converted program, if it kept the op."""
    source, index = node.args[0], node.args[1]
    same = [n for n in groups.get(getattr(source, "name", None), ()) if n.target is operator.getitem
            and n.args[1] == index and getattr(n.args[0], "target", None) == getattr(source, "target", None)]
    if len(same) != 1:
        return OnnxSite(SiteKind.ABSENT, reason=f"element {index} of `{getattr(source, 'target', source)}`, which the "
                        "exporter's decompositions rewrote")
    return (OnnxSite(SiteKind.VALUE, same[0].name) if same[0].name in values
            else OnnxSite(SiteKind.ABSENT, reason="no ONNX value carries it"))


def _made_by(group: list[torch.fx.Node], values: set[str]) -> OnnxSite:
    """The node of a decomposition that the rest of the graph reads: its result."""
    members = set(group)
    exposed = [n for n in group if not n.users or any(u not in members for u in n.users)]
    if len(exposed) != 1:
        return OnnxSite(SiteKind.ABSENT, reason=f"its op decomposes into {len(exposed)} values read elsewhere; the "
                        "graph does not say which is the output")
    name = exposed[0].name
    if name not in values:
        return OnnxSite(SiteKind.ABSENT, reason="no ONNX value carries it")
    return OnnxSite(SiteKind.VALUE, name)

"""Prepare one case of a model: the stages before the providers (docs/verdict.md#stages). Build it
(once per configured model), probe and key it, fingerprint the float64 reference (beside the export
in a child where that pays, else before it), export it (once per export: cases that differ only in
dynamic dimensions or input values share one graph), run the transform on it, map the reference's
layers to the values of the graph that ships. With a plan
(``gate.pipeline.stages``) each stage's output comes from its key where the plan allows; this
module computes, the plan decides.

A failure of the model becomes ``run.error`` with its status; a wrong config raises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gate import fingerprint
from gate.config import Config, ModelSpec
from gate.core import collector, device
from gate.core.failure import ModelError
from gate.core.progress import Progress
from gate.core.reuse import StageRun
from gate.core.runs import LayerInfo, Meta, ModelRun, OnnxSite, RunError
from gate.core.status import CacheState, DataDependence, ErrorStatus, Stage
from gate.core.versions import versions
from gate.export.record import Graph, GraphFacts
from gate.model import inputs as inputs_mod
from gate.pipeline import beside
from gate.pipeline.stages import Plan

if TYPE_CHECKING:
    import torch

    from gate.export.exporter import Exported
    from gate.export.structure import Structure
    from gate.model.build import BuiltModel, Module
    from gate.model.torch_hooks import LayerOutput
    from gate.model.trace import Probe
    from gate.runners.reference import Reference


@dataclass
class Prepared:
    """A case built, exported, transformed and run on the reference."""

    run: ModelRun
    built: BuiltModel | None  # None once no later run of this command needs the model (``Memo.drop_model``)
    model_file: Path | None  # the shipped ONNX graph (external data beside it); None when the export failed
    inputs: list[np.ndarray]
    outputs: list[np.ndarray] = field(default_factory=list)  # the reference's outputs (float64), in order
    graph: Graph | None = None  # what ships: owns the folder model_file is in
    probe: Probe | None = None  # the torch-cpu float32 capture, when it ran


@dataclass
class Shared:
    """The graph one export gave the cases that share it, and how its stages went for the first."""

    case: str
    graph: Graph | ModelError
    stages: list[StageRun]


@dataclass
class Memo:
    """What the cases of one configured model share within a command: the built model and the
    exports by key. Cases of a model are consecutive, so only the current model's are kept; where
    the command said which cases it runs (``of``), the model goes with its last case's PyTorch runs."""

    model: str | None = None
    modules: dict[str, Module] = field(default_factory=dict)
    exports: dict[tuple[Any, ...], Shared] = field(default_factory=dict)
    cases: Counter[str] | None = None  # per configured model, its cases still to enter; None: not said

    @classmethod
    def of(cls, models: Iterable[ModelSpec]) -> Memo:
        return cls(cases=Counter(spec.base or spec.name for spec in models))

    def enter(self, spec: ModelSpec) -> Memo:
        base = spec.base or spec.name
        if base != self.model:
            self.model, self.modules, self.exports = base, {}, {}
        if self.cases is not None:
            self.cases[base] -= 1
        return self

    def drop_model(self, prepared: Prepared) -> bool:
        """Drop the model of ``prepared`` where no later case of this command runs it: what is left
        of its run (the ONNX Runtime providers) does not hold its weights beside a worker's session.
        Whether the model is gone."""
        if prepared.built is None:
            return True
        base = prepared.built.spec.base or prepared.built.spec.name
        if self.cases is None or self.cases[base] > 0:
            return False
        self.modules.pop(base, None)
        prepared.built = None
        return True


def _meta(built: BuiltModel) -> Meta:
    tolerance = built.spec.output_tolerance
    dtypes = [str(t.dtype).removeprefix("torch.") for t in built.inputs]
    v = versions()  # by name: Meta's other fields are no versions
    return Meta(parity_gate=v["parity_gate"], torch=v["torch"], onnx=v["onnx"], onnxruntime=v["onnxruntime"],
                onnxscript=v["onnxscript"], inputs_digest=built.inputs_digest,  # weights_digest: once hashed (``prepare``)
                inputs=inputs_mod.describe(built.input_names, built.arrays, dtypes),
                machine=device.machine(), fingerprint=fingerprint.parameters(),
                normalizations=list(built.normalizations), output_tolerance=list(tolerance) if tolerance else None)


def _empty(module: torch.nn.Module) -> bool:
    members = (module.children(), module.parameters(), module.buffers())
    return not any(True for each in members for _ in each)


def _build(config: Config, spec: ModelSpec, memo: Memo, progress: Progress,
           plan: Plan | None) -> BuiltModel:
    from gate.model.budget import check, check_inputs
    from gate.model.build import build, build_module

    check_inputs(spec, config.isolation.memory_mb)  # each case's own shapes, before any is drawn
    key = spec.base or spec.name
    if key not in memo.modules:
        check(spec, config.root, config.isolation.memory_mb)  # before the build: fail early, saying what it needs
        progress(f"{spec.name}: building")
        known = plan.known_weights() if plan is not None else None  # the baseline's digests of its weights
        memo.modules[key] = build_module(spec, config.root, known)
    return build(spec, config.root, memo.modules[key])


def _sites(records: list[LayerOutput], exported: Exported) -> dict[str, OnnxSite]:
    from gate.export.layermap import assign, fold_batchnorms

    sites = assign(records, exported.calls, exported.shapes, exported.available, ambiguous=exported.ambiguous,
                   outputs=exported.outputs)
    return fold_batchnorms(records, sites) if exported.as_shipped else sites


def _mapped(records: list[LayerOutput], exported: Exported) -> tuple[dict[str, OnnxSite], Structure | None]:
    """The layer map of a fresh export, and its structure where the exporter left one: mapped on the
    graph before optimization (every value there exists), then what the optimizer folded away, so the
    structure's map serves a later binding of other weights (``structure.with_availability``)."""
    if exported.structure is None or exported.unoptimized is None:
        return _sites(records, exported), None
    from gate.export.layermap import FOLDED, assign, through_identities
    from gate.export.structure import Structure, with_availability

    before = through_identities(assign(records, exported.calls, exported.shapes, exported.unoptimized,
                                       ambiguous=exported.ambiguous, outputs=exported.outputs), exported.identities)
    proto, weights, renamed = exported.structure
    return (with_availability(before, exported.available, FOLDED),
            Structure(proto, weights, before, exported.opset, renamed))


def _export(built: BuiltModel, probe: Probe | None, progress: Progress) -> tuple[Graph, Structure | None]:
    """The export stage: the graph and its layer map (from the probe's records where it ran; else a
    mapper for the reference's), and the structure a weight-only change can bind into."""
    spec = built.spec
    progress(f"{spec.name}: " + ("reading the artifact" if spec.artifact else "exporting to ONNX"))
    with built.fresh():  # tracing runs the model's Python: what it caches stays in the export
        if spec.artifact is not None:
            from gate.export.artifact import load

            exported = load(built)
        else:
            from gate.export.exporter import export

            exported = export(built, probe.recordable if probe is not None else None)
    facts = GraphFacts.of(exported.proto, exported.exporter, exported.fallback, exported.opset)
    assert exported.path is not None  # an artifact loaded or a graph exported is a file
    if probe is not None:
        sites, structure = _mapped(probe.records, exported)
        return Graph.of_file(exported.path, facts, sites, exported.folders), structure
    return Graph.of_file(exported.path, facts, None, exported.folders, lambda recs: _sites(recs, exported)), None


def _bind(built: BuiltModel, stored: Structure, progress: Progress) -> Graph:
    """The export stage after a weight-only change: the stored structure with this model's weights,
    through the exporter's optimizer, not traced again."""
    from gate.export.exporter import bound
    from gate.export.layermap import FOLDED
    from gate.export.structure import with_availability

    progress(f"{built.spec.name}: the structure from the store, these weights bound into it (not exported again)")
    with built.fresh():
        exported = bound(built, stored)
    facts = GraphFacts.of(exported.proto, exported.exporter, None, exported.opset)
    assert exported.path is not None  # the bound graph is a file
    return Graph.of_file(exported.path, facts, with_availability(stored.sites, exported.available, FOLDED),
                         exported.folders)


def _transform(config: Config, spec: ModelSpec, exported: Graph, progress: Progress) -> Graph:
    from gate.export.transform import ship

    progress(f"{spec.name}: transform `{spec.transform}`")
    return ship(spec, exported, config.root)


def _ship(config: Config, built: BuiltModel, run: ModelRun, memo: Memo, plan: Plan | None,
          progress: Progress, starting: Callable[[bool], None] = lambda _: None) -> Graph | ModelError:
    """The export and transform stages, once per export within a command; ``starting`` is told
    as a fresh export (False) or a binding of new weights into the stored structure (True) starts."""
    spec = built.spec
    shared = memo.exports.get(spec.export_key)
    if shared is not None:
        if plan is not None:
            plan.shared(run, shared.stages, shared.case, spec.transform)
        return shared.graph
    probe = plan.probe if plan is not None else None
    try:
        if plan is None:
            graph = _export(built, None, progress)[0]
            graph = _transform(config, spec, graph, progress) if spec.transform else graph
        else:
            def fresh() -> tuple[Graph, Structure | None]:
                starting(False)
                return _export(built, probe, progress)

            def bind(stored: Structure) -> Graph:
                starting(True)
                return _bind(built, stored, progress)

            graph = plan.export(run, fresh, bind)
            if spec.transform:
                exported = graph
                graph = plan.transform(run, spec.transform, exported, lambda: _transform(config, spec, exported, progress))
            _say_reused(run, progress)
        result: Graph | ModelError = graph
    except ModelError as exc:
        result = exc
    memo.exports[spec.export_key] = Shared(spec.name, result, list(run.reuse.stages) if run.reuse else [])
    return result


def _say_reused(run: ModelRun, progress: Progress) -> None:
    taken = [str(s.stage) for s in (run.reuse.stages if run.reuse else [])
             if s.state == CacheState.HIT and s.stage != Stage.STRUCTURE]  # the binding said so
    if taken:
        progress(f"{run.name}: {' and '.join(taken)} from the store (keys unchanged)")


def _record_graph(run: ModelRun, spec: ModelSpec, graph: Graph) -> None:
    f, meta = graph.facts, run.meta
    meta.exporter, meta.export_fallback, meta.opset = f.exporter, f.fallback, f.opset
    meta.op_types, meta.dynamic_dims = list(f.op_types), f.dynamic_dims  # graph_digest: once hashed (``prepare``)
    meta.transform = spec.transform
    meta.graph_precision = f.precision if spec.transform or spec.artifact else None
    meta.lowered = list(f.lowered)


def prepare(config: Config, spec: ModelSpec, progress: Progress = lambda _: None, memo: Memo | None = None,
            plan: Plan | None = None, digest: bool = True) -> Prepared:
    """Build (once), probe and key, export (once per export) and transform, fingerprint the float64
    reference, map its layers; with ``plan``, each stage's output comes from its key where it may.
    ``digest``: the graph's digest is on the run; else the caller adds it once it needs it
    (``add_graph_digest``)."""
    memo = (memo if memo is not None else Memo()).enter(spec)
    built = _build(config, spec, memo, progress, plan)
    run = ModelRun(spec.name, _meta(built))
    if spec.sweep is None and _empty(built.module):  # a sweep's op has nothing but its call
        run.error = RunError(ErrorStatus.EMPTY, f"model `{spec.name}` has no modules, parameters or buffers: nothing to check")
        run.meta.weights_digest = built.weights_digest
        return Prepared(run, built, None, built.arrays)
    with collector.frozen():
        prepared = _stages(config, built, run, memo, plan, progress)
    if digest:
        add_graph_digest(prepared, plan)
    return prepared


def add_graph_digest(prepared: Prepared, plan: Plan | None) -> None:
    """The shipped graph's digest onto the run, and whether it is the graph the baseline records. It is
    hashed on a thread from when the graph is written (0.5 GB for GPT-2): a check waits for it only
    after the providers, which read the graph, not its digest."""
    graph, run = prepared.graph, prepared.run
    if graph is None or run.meta.graph_digest is not None:
        return
    run.meta.graph_digest = graph.digest.result()
    if plan is not None:
        plan.shipped(run, run.meta.graph_digest)


def _stages(config: Config, built: BuiltModel, run: ModelRun, memo: Memo, plan: Plan | None,
            progress: Progress) -> Prepared:
    """Probe and key, the float64 reference (beside the export where it may, else before it), export
    and transform."""
    spec = built.spec
    if plan is not None:
        plan.start(config, built, run, progress)
    slot = beside.Slot(lambda binding: _beside(built, memo, plan, binding))
    first: list[Reference | ModelError] = []

    def starting(binding: bool) -> None:
        """As the export or binding starts: the reference beside it in a child, else here, first. Its
        float64 activations (a long sequence's attention maps) are freed before the export writes the
        graph, whose file pages the run is charged for from then on."""
        if first:  # a binding that failed, then a fresh export: the reference ran before the binding
            return
        slot.start(binding)
        if slot.child is None and plan is not None and not plan.reference:
            first.append(_computed(built, progress))

    with beside.stopped_on_error(slot):
        shipped = _ship(config, built, run, memo, plan, progress, starting)
        if plan is not None:
            plan.release()  # the transform has read the exported graph: its files may now be stored
        built.record_weights(run.meta)  # hashed while the export ran
        graph = None
        if isinstance(shipped, ModelError):
            run.error = RunError.of(shipped)
        else:
            graph = shipped
            _record_graph(run, spec, graph)
        probe = plan.probe if plan is not None else None
        if plan is not None and plan.reference:
            progress(f"{spec.name}: float64 reference from the baseline (its key unchanged)")
            outputs = plan.reused_reference(run)
            records = plan.probe.records if plan.probe is not None else []
        else:
            reference = _reference(built, run, graph, plan, progress, first[0] if first else slot.child)
            if reference is None:
                return Prepared(run, built, None, built.arrays)
            outputs, records = reference
        if graph is not None:  # a graph shared with a case whose forward took other branches maps layers
            ran = {x.name for x in run.layers}  # this one never ran: its own have no value in that graph
            run.onnx_map = {name: site for name, site in graph.layer_map(records).items() if name in ran}
    return Prepared(run, built, graph.path if graph is not None else None, built.arrays, outputs, graph, probe)


def _beside(built: BuiltModel, memo: Memo, plan: Plan | None, binding: bool) -> beside.Beside | None:
    """The reference started beside the export (``gate.pipeline.beside``), asked as a fresh export
    starts tracing or new weights start binding into the stored structure (``binding``; not for a
    graph from the store), where this case computes both here (its reference is not the baseline's,
    its export is not shared or read) and the probe ran: its records and its time tell how long the
    reference is."""
    spec = built.spec
    probe = plan.probe if plan is not None else None
    if probe is None or plan is None or plan.reference or spec.export_key in memo.exports or spec.artifact:
        return None
    return beside.start(built, len(probe.records), probe.seconds, probe.ops, binding)


def _computed(built: BuiltModel, progress: Progress,
              child: beside.Beside | None = None) -> Reference | ModelError:
    """The float64 reference: from the child that ran it beside the export, else run here."""
    from gate.runners.reference import run_reference

    spec = built.spec
    ref = None
    if child is not None:
        progress(f"{spec.name}: float64 reference on torch-cpu, {beside.BESIDE}")
        ref = beside.wait_or_stop(child)
    if ref is None:
        progress(f"{spec.name}: float64 reference on torch-cpu")
    try:
        return ref or run_reference(built, progress, spec.reference_promotion)
    except ModelError as exc:
        return exc


def _reference(built: BuiltModel, run: ModelRun, graph: Graph | None, plan: Plan | None,
               progress: Progress, given: Reference | ModelError | beside.Beside | None = None
               ) -> tuple[list[np.ndarray], list[LayerOutput]] | None:
    """The float64 reference stage (``given``: computed before the export, or the child running it
    beside the export); its outputs and records onto ``run``; None when the model failed in it
    (``run.error`` says how)."""
    from gate.runners.reference import Reference, compare_as_given

    spec = built.spec
    ref = given if isinstance(given, Reference | ModelError) else _computed(built, progress, given)
    if isinstance(ref, ModelError):
        run.error = RunError.of(ref)
        if graph is not None:  # the report of a failed reference still says what was exported
            run.meta.graph_digest = graph.digest.result()
        return None
    run.reference_dtype = ref.dtype
    run.meta.promoted, run.meta.below_float64 = ref.notes.promoted or None, ref.notes.below or None
    run.meta.narrowed = dict(ref.notes.narrowed)  # {}: none (None only in baselines older than the count)
    run.layers = [LayerInfo(r.name, r.type, r.fp, reached=r.reached,
                            data_dependent=DataDependence.OP if r.data_dependent else None, integer=r.integer)
                  for r in ref.records + ref.gradients]
    if built.training:
        progress(f"{spec.name}: the model as given (modules left in training mode)")
        run.meta.training = compare_as_given(built, ref, spec.reference_promotion)
    if plan is not None:
        plan.computed_reference(run, ref.outputs, spec.tolerance.reference)
    return ref.outputs, ref.records

"""What a command may take from before instead of computing it: decided once per model, here.

A model's run is a pipeline of stages (docs/verdict.md#stages): build, probe and key, export,
transform, float64 reference, providers, judge. Build, probe, providers and judge run every time.
The others are reused only under a key made of exactly what they read (``STAGE_PARTS`` in
``gate.pipeline.content_key``):

- the export (graph and layer map) from the store (``gate.store``) under the export's key;
- the transform's output likewise, where the model declares what else the transform reads
  (``transform-inputs``); otherwise the transform is user code the gate cannot see into, and it
  runs on every check, on the exported graph;
- the float64 reference's fingerprints from the baseline when its recorded reference key is this
  run's (``check`` only: ``--full``/``PARITY_GATE_FULL`` and ``update-baseline`` always run it),
  and its outputs from the store.

Every stage asks one decision, ``uncached``: why it cannot take its output (a ``CacheState``, and
the reference's ``FullWhy``), or None. What a stage computes it stores under its key. A key that
already holds another output is an alarm (``Alarm``): nothing is replaced, the report says which
stage and key, and the key is neither read nor written here again. ``Reuse`` on the run says, per
stage, what was taken and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from gate import env
from gate.core.background import Background
from gate.core.progress import Progress
from gate.core.reuse import Reuse, Shipped, StageRun
from gate.core.runs import LayerInfo, ModelRun
from gate.core.status import CacheState, FullWhy, Stage
from gate.errors import FormatError
from gate.export.record import Graph
from gate.export.structure import Structure, Unbindable
from gate.pipeline import alarms, reuse_explain
from gate.runners import reference_outputs
from gate.runners.reference_outputs import ReferenceOutputs
from gate.store import Corrupt, Entry, Lookup, Output, Put, PutState, Store, store_dir

if TYPE_CHECKING:
    from gate.config import Config
    from gate.formats.baseline import Baseline
    from gate.model.build import BuiltModel
    from gate.model.trace import Probe
    from gate.pipeline.content_key import ContentKey


@dataclass(frozen=True)
class ReusePolicy:
    """How a command reuses: ``full_why`` says why it reads nothing (None: it takes what the keys
    allow); the store, where there is one (a run that reads nothing still writes what it computed)."""

    store: Store | None
    full_why: FullWhy | None = None

    @classmethod
    def for_check(cls, full: bool = False) -> ReusePolicy:
        root = store_dir()
        return cls(Store(root) if root is not None else None, FullWhy.FORCED if full or env.full() else None)

    @classmethod
    def for_update(cls) -> ReusePolicy:
        return replace(cls.for_check(), full_why=FullWhy.UPDATE)

    def plan(self, baseline: Baseline | None, rewritten: bool = False) -> Plan:
        return Plan(self, baseline, rewritten)


@dataclass(frozen=True)
class Uncached:
    """Why a stage computes its output: the state its record says, and why the float64 reference runs."""

    state: CacheState
    why: FullWhy | None = None


_UNSTORED = (CacheState.UNKEYED, CacheState.OFF, CacheState.ALARM)  # a stage computed so stores nothing


def uncached(stage: Stage, key: str | None, policy: ReusePolicy, baseline: Baseline | None = None, *,
             random: bool = False, gradients: bool = False, training: bool = False,
             outputs: bool = True, rewritten: bool = False) -> Uncached | None:
    """Why ``stage`` cannot take its output under ``key`` (None: it takes it from the store, or the
    reference its fingerprints from ``baseline``): the one decision every stage asks. The reference's
    also reads what its key cannot vouch for (random draws, the backward, training mode), whether
    the float64 outputs a tolerance needs are at hand (``outputs``), and whether the change under check
    rewrote the baseline (``rewritten``: keys and numbers written together vouch for nothing)."""
    if key is None:  # the probe failed, or what the stage reads cannot be stated (``stage_keys``)
        return Uncached(CacheState.UNKEYED, FullWhy.UNKEYABLE)
    miss = CacheState.MISS if policy.store is not None else CacheState.OFF
    if policy.full_why is not None:
        return Uncached(CacheState.BYPASSED if policy.store is not None else miss, policy.full_why)
    if stage != Stage.REFERENCE:
        return None if policy.store is not None else Uncached(miss)
    recorded = _recorded(baseline)
    ours = recorded.stage(Stage.REFERENCE) if recorded is not None else None
    alarmed = policy.store is not None and policy.store.alarmed(stage, key) is not None
    # The first that holds. The key traces neither the backward (a custom autograd Function, a hook) nor
    # the training-mode forward the audit runs; allclose gates on the float64 outputs, which it stores.
    return next((Uncached(state, why) for why, state, holds in (
        (FullWhy.NO_BASELINE, miss, baseline is None), (FullWhy.NO_KEY, miss, ours is None),
        (FullWhy.REWRITTEN, miss, rewritten),
        (FullWhy.UNKEYABLE, CacheState.UNKEYED, random), (FullWhy.GRADIENTS, CacheState.UNKEYED, gradients),
        (FullWhy.TRAINING, CacheState.UNKEYED, training), (FullWhy.ALARM, CacheState.ALARM, alarmed),
        (FullWhy.KEY_CHANGED, miss, key != ours), (FullWhy.OUTPUTS, miss, not outputs)) if holds), None)


def _recorded(baseline: Baseline | None) -> ContentKey | None:
    from gate.pipeline.content_key import ContentKey

    raw = baseline.meta.content_key if baseline is not None else None
    return ContentKey.from_dict(raw) if raw else None


class Plan:
    """One model's stages. ``start`` (after the build) probes, keys and decides the reference;
    ``export``, ``transform`` and the reference's calls take each stage's output from its key or
    compute and store it; ``finish`` waits for the writes and reports their alarms."""

    def __init__(self, policy: ReusePolicy, baseline: Baseline | None, rewritten: bool = False):
        self.policy, self.baseline, self.rewritten = policy, baseline, rewritten
        self.probe: Probe | None = None  # the torch-cpu float32 capture
        self.key: ContentKey | None = None
        self.reference = False  # the float64 reference's fingerprints are the baseline's
        self._why_not = uncached(Stage.REFERENCE, None, policy)  # why the reference runs: no key yet
        self._prefetched: Background[tuple[Lookup, Graph | None]] | None = None
        recorded = _recorded(self.baseline)
        if recorded is not None and uncached(Stage.EXPORT, recorded.stage(Stage.EXPORT), policy) is None:
            # The export's entry this run most likely needs, read beside the build (a CPU left idle).
            self._prefetched = Background(self._prefetch, recorded.stage(Stage.EXPORT))
        self._deferred: list[tuple[ModelRun, Callable[[], Put]]] = []  # writes not started yet (``release``)
        self._writes: list[tuple[ModelRun, Background[Put]]] = []

    # probe and key ---------------------------------------------------------------------------

    def known_weights(self) -> tuple[dict[str, str], dict[str, str] | None] | None:
        """The tensors' digests and value sums the baseline recorded: the build sums only the tensors whose
        digest moved (``weights.weights_digest``); ``--full`` and ``update-baseline`` sum all."""
        meta = self.baseline.meta if self.baseline is not None else None
        if self.policy.full_why is not None or not meta or not meta.tensor_digests:
            return None
        return dict(meta.tensor_digests), meta.tensor_sums

    def start(self, config: Config, built: BuiltModel, run: ModelRun, progress: Progress) -> None:
        """Probe and key ``built``; decide whether the reference is the baseline's (``run.reuse``)."""
        from gate.model import trace
        from gate.pipeline import content_key

        spec, recorded = built.spec, _recorded(self.baseline)
        progress(f"{spec.name}: float32 forward on torch-cpu, traced (content key)")
        try:
            self.probe = p = trace.probe(built)
        except Exception as exc:  # noqa: BLE001 - the full path runs and reports the model's failure
            run.reuse = Reuse(None, self._why_not.why if self._why_not else None, details=[
                f"the float32 forward failed ({type(exc).__name__}): no key can vouch for this run"])
            return
        key = content_key.take(spec, built.module, built.input_names, config.root, p.trace, p.ops,
                               built.weights_digest, built.inputs_digest, p.custom)
        self.key, run.meta.content_key = key, key.to_dict()
        built.record_weights(run.meta)
        run.meta.module_code, run.meta.module_calls, run.first_use = p.modules, p.calls, p.first_use
        run.meta.random_draws = p.draws or None
        changed = key.changed(recorded) if recorded is not None else []
        details = reuse_explain.details(changed, key, recorded, run.meta, self.baseline)
        if p.random:
            details.append(f"the forward draws random numbers ({'; '.join(p.random[:3])})")
        outputs = not spec.output_tolerance or self._outputs_entry() is not None
        self._why_not = uncached(Stage.REFERENCE, self._reference_key(), self.policy, self.baseline,
                             random=bool(p.random), gradients=spec.gradients, training=bool(built.training),
                             outputs=outputs, rewritten=self.rewritten)
        self.reference = self._why_not is None
        why = self._why_not.why if self._why_not else None
        run.reuse = Reuse(key.key, why, changed=changed, details=details, unseen=list(p.custom))

    # export and transform ----------------------------------------------------------------------

    def export(self, run: ModelRun, compute: Callable[[], tuple[Graph, Structure | None]],
               bind: Callable[[Structure], Graph] | None = None) -> Graph:
        """The exported graph and its layer map: from the store under the export's key; else, where
        the store holds the structure of this code (only the weights changed), that structure with
        these weights bound (``bind``); else ``compute``d, a fresh export, which stores both."""
        key = self.key.stage(Stage.EXPORT) if self.key is not None else None
        skey = self.key.stage(Stage.STRUCTURE) if self.key is not None else None
        structure: list[Structure | None] = []

        def fresh() -> Graph:
            graph, made = compute()
            structure.append(made)
            return graph

        bound = partial(self._bound, run, skey, bind) if bind is not None and skey is not None else None
        graph = self._stage(run, Stage.EXPORT, key, fresh, bound)
        made, why_not = structure[0] if structure else None, uncached(Stage.STRUCTURE, skey, self.policy)
        if made and skey is not None and (not why_not or why_not.state not in _UNSTORED):  # where a store is
            state = why_not.state if why_not else self._lookup(Stage.STRUCTURE, skey).state
            self._record(run, StageRun(Stage.STRUCTURE, skey, state))
            if state not in _UNSTORED:
                self._put(run, Stage.STRUCTURE, skey, made)
        return graph

    def _entry_graph(self, run: ModelRun, stage: Stage, key: str) -> Graph | Lookup:
        """The graph the store holds under ``key`` (recorded as a hit), or the lookup that found none."""
        found, read = self._found(stage, key)
        if found.entry is None:
            return found
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

        store = self.policy.store
        assert store is not None  # an entry was found in it
        try:
            graph = read or Graph.from_entry(found.entry)
            recorded = self._recorded_graph(stage)
            why = graph.unproven(found.entry, recorded)  # before any provider runs it (Corrupt: damaged)
        except (FormatError, Corrupt, OSError, ValueError, DecodeError) as exc:  # one onnx cannot read too
            store.discard(found.entry.folder)
            return Lookup(CacheState.CORRUPT, note=f"entry {key[:12]}: {exc}")
        if why is not None:  # it holds another graph than it claims: the key is barred, the stage reruns
            raised = store.raise_alarm(stage, key, found.entry.digest, graph.output_digest(), why)
            if run.reuse is not None:
                alarms.alarm(run, raised)
            return Lookup(CacheState.ALARM, note=why)
        self._record(run, StageRun(stage, key, CacheState.HIT))
        return graph

    def _recorded_graph(self, stage: Stage) -> str | None:
        """The graph digest the baseline records, where this stage's output is the graph that ships and
        its key is the one the baseline was recorded under (the same key: the same graph)."""
        recorded, meta = _recorded(self.baseline), self.baseline.meta if self.baseline is not None else None
        if recorded is None or meta is None or self.key is None or not meta.graph_digest:
            return None
        if stage == Stage.EXPORT and meta.transform:
            return None  # a transform's output shipped, not the export's
        stages = (Stage.EXPORT, Stage.TRANSFORM) if stage == Stage.TRANSFORM else (Stage.EXPORT,)
        same = all(recorded.stage(s) is not None and recorded.stage(s) == self.key.stage(s) for s in stages)
        return meta.graph_digest if same else None

    def _bound(self, run: ModelRun, skey: str, bind: Callable[[Structure], Graph], key: str,
               missed: Lookup) -> Graph | None:
        """The stored structure with this model's weights (None: none stored, or they do not fit)."""
        found = self._lookup(Stage.STRUCTURE, skey)
        if found.entry is None:
            return None
        try:
            graph = bind(Structure.from_entry(found.entry))
        except (FormatError, Corrupt, Unbindable):
            return None
        self._record(run, StageRun(Stage.STRUCTURE, skey, CacheState.HIT))
        self._record(run, StageRun(Stage.EXPORT, key, missed.state, missed.note))
        self._put(run, Stage.EXPORT, key, graph)
        return graph

    def transform(self, run: ModelRun, transform: str, exported: Graph, compute: Callable[[], Graph]) -> Graph:
        """What ships: from the store where the transform is keyed (its declared inputs and the
        exported graph it reads), else ``compute``d on every check."""
        from gate.pipeline.content_key import transform_key

        key = transform_key(self.key, exported.output_digest()) if self.key is not None else None
        if run.reuse is not None:  # named before it runs: a run it fails is said with its name too
            run.reuse.transform = transform
        return self._stage(run, Stage.TRANSFORM, key, compute)

    def _stage(self, run: ModelRun, stage: Stage, key: str | None, compute: Callable[[], Graph],
               bound: Callable[[str, Lookup], Graph | None] | None = None) -> Graph:
        """The stage's output from the store under ``key``, else ``bound`` (the export: the stored
        structure with these weights), else ``compute``d and stored."""
        why_not = uncached(stage, key, self.policy)
        state, note = (why_not.state if why_not else CacheState.MISS), None
        if why_not is None:
            assert key is not None  # a stage without a key is uncached
            hit = self._entry_graph(run, stage, key)
            if isinstance(hit, Lookup) and bound is not None:
                hit = bound(key, hit) or hit
            if not isinstance(hit, Lookup):
                return hit
            state, note = hit.state, hit.note
        graph = compute()
        self._record(run, StageRun(stage, key, state, note))
        if key is not None and state not in _UNSTORED and graph.sites is not None:
            self._put(run, stage, key, graph)
        return graph

    def shared(self, run: ModelRun, stages: list[StageRun], case: str, transform: str | None) -> None:
        """A case that takes the graph another case of its model exported: that case's stage runs."""
        if run.reuse is not None:
            run.reuse.transform = transform
        for s in stages:
            self._record(run, replace(s, note=f"the graph of case `{case}` (one export for both)"))

    def _found(self, stage: Stage, key: str) -> tuple[Lookup, Graph | None]:
        if stage == Stage.EXPORT and self._prefetched is not None:
            prefetched, self._prefetched = self._prefetched, None
            if (recorded := _recorded(self.baseline)) is not None and recorded.stage(Stage.EXPORT) == key:
                return prefetched.result()
        return self._lookup(stage, key, Graph.proves), None

    def _prefetch(self, key: str) -> tuple[Lookup, Graph | None]:
        """The export's entry under the baseline's key and its graph, digested on a thread from now: the
        digest proves the weights file (``_entry_graph``), which the store does not hash."""
        found = self._lookup(Stage.EXPORT, key, Graph.proves)
        try:
            return found, Graph.from_entry(found.entry) if found.entry is not None else None
        except (FormatError, Corrupt):
            return found, None  # _entry_graph reads it again and says why

    def _lookup(self, stage: Stage, key: str, unchecked: frozenset[str] = frozenset()) -> Lookup:
        assert self.policy.store is not None
        return self.policy.store.get(stage, key, unchecked)

    # the float64 reference -----------------------------------------------------------------------

    def reused_reference(self, run: ModelRun) -> list[np.ndarray]:
        """The reference's layers from the baseline, onto ``run``; its outputs from the store (none:
        the exact output metrics are not measured, and the report says so)."""
        b = self.baseline
        assert b is not None and run.reuse is not None
        run.reference_dtype = b.reference_dtype
        # No module is in training mode (else the reference runs): no training-mode audit.
        run.meta.promoted, run.meta.below_float64, run.meta.training = b.meta.promoted, b.meta.below_float64, None
        run.meta.narrowed = b.meta.narrowed
        run.layers = [LayerInfo(x.name, x.type, x.fp, reached=x.reached, data_dependent=x.data_dependent)
                      for x in b.layers]
        found = self._outputs_entry()
        try:
            outputs = reference_outputs.read(found) if found is not None else []
        except reference_outputs.Unreadable:
            outputs = []
        run.reuse.outputs = bool(outputs)
        self._record(run, StageRun(Stage.REFERENCE, self._reference_key(), CacheState.HIT,
                                   None if outputs else "the store holds no float64 outputs under its key"))
        return outputs

    def computed_reference(self, run: ModelRun, outputs: list[np.ndarray], tolerance: float) -> None:
        """The reference ran: say why; store its outputs (within ``tolerance`` of any its key holds)."""
        key, state = self._reference_key(), self._why_not.state if self._why_not else CacheState.MISS
        self._record(run, StageRun(Stage.REFERENCE, key, state))
        if key is not None and outputs and state not in _UNSTORED:
            self._put(run, Stage.REFERENCE, key, ReferenceOutputs(list(outputs), tolerance))

    def _reference_key(self) -> str | None:
        return self.key.stage(Stage.REFERENCE) if self.key is not None else None

    def _outputs_entry(self) -> Entry | None:
        key = self._reference_key()
        if key is None or self.policy.store is None:
            return None
        found = self._lookup(Stage.REFERENCE, key)
        return found.entry if found.entry is not None and reference_outputs.FILE in found.entry.files else None

    def shipped(self, run: ModelRun, digest: str | None) -> None:
        """Say whether the graph that ships is the one the baseline records."""
        if run.reuse is not None:
            run.reuse.shipped = Shipped(digest, self.baseline.meta.graph_digest if self.baseline is not None else None)

    # writes and their alarms ---------------------------------------------------------------------

    def _record(self, run: ModelRun, stage_run: StageRun) -> None:
        if run.reuse is None:
            run.reuse = Reuse(None, FullWhy.UNKEYABLE)
        run.reuse.stages = [s for s in run.reuse.stages if s.stage != stage_run.stage] + [stage_run]

    def _put(self, run: ModelRun, stage: Stage, key: str, output: Output) -> None:
        """A write for ``release`` to start, every stage's output by its contract (``gate.store.Output``).
        The closure holds the output (and the folder its files are in) alive until written."""
        store = self.policy.store
        assert store is not None
        self._deferred.append((run, lambda: store.put(stage, key, output.write, output.output_digest(),
                                                      output.payload(), output.differs_from, output.proves)))

    def release(self) -> None:
        """Start the writes on a thread, where the copies and their checksums overlap the providers'
        runs. Not before the stages that read an output are done with it: storing hard-links its files,
        and onnx refuses to load external data from a file with more than one link."""
        deferred, self._deferred = self._deferred, []
        self._writes += [(run, Background(write)) for run, write in deferred]

    def finish(self) -> None:
        """Wait for the writes; an alarm one raised goes onto its run's stage and into the report. Any
        other exception a write raised is a bug, raised here: never an alarm lost in silence."""
        self.release()
        writes, self._writes = self._writes, []
        from google.protobuf.message import DecodeError

        for run, pending in writes:
            try:
                put = pending.result()
            except (OSError, FormatError, Corrupt, reference_outputs.Unreadable, DecodeError):
                continue  # the store could not be written, or what it holds not read: a miss next time
            if put.state in (PutState.ALARM, PutState.BARRED) and put.alarm is not None and run.reuse is not None:
                alarms.alarm(run, put.alarm)

"""What a command may take from before instead of computing it: decided once per model, here.

After the build, the probe (``gate.model.trace``) runs the model once in float32 with every
operation traced, and the content key (``gate.model.content_key``) digests what the float64
reference and the exported graph are functions of. Then:

- the float64 reference's fingerprints come from the baseline when its recorded key equals this
  run's (``check`` only: ``--full``/``PARITY_GATE_FULL`` and ``update-baseline`` always run it);
- the shipped graph comes from the export cache (``gate.export.cache``) when it holds the key,
  and goes into it when it was exported;
- every provider still runs and is judged as always; the probe's capture is the ``torch-cpu``
  float32 run (the same forward, once).

``Reuse`` on the run says what was taken and why, or which part of the key changed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gate.commands import reuse_explain
from gate.core.background import Background
from gate.core.reuse import Reuse
from gate.core.runs import LayerInfo, ModelRun, OnnxSite
from gate.core.stages import Progress
from gate.core.status import CacheState, FullWhy, SiteKind
from gate.errors import FormatError
from gate.export.cache import Corrupt, Entry, ExportCache, Lookup, cache_dir
from gate.formats.fields import Obj

if TYPE_CHECKING:
    from gate.commands.prepare import Prepared
    from gate.config import Config
    from gate.formats.baseline import Baseline

FULL_ENV = "PARITY_GATE_FULL"
HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class ReusePolicy:
    """How a command reuses: ``read`` (take the reference from the baseline and the graph from the
    cache where the key allows), else ``full_why`` says why not; a cache, where there is one."""

    read: bool
    cache: ExportCache | None
    full_why: FullWhy | None = None

    @classmethod
    def for_check(cls, full: bool = False) -> ReusePolicy:
        root = cache_dir()
        cache = ExportCache(root) if root is not None else None
        if full or _flag(FULL_ENV):
            return cls(False, cache, FullWhy.FORCED)
        return cls(True, cache)

    @classmethod
    def for_update(cls) -> ReusePolicy:
        root = cache_dir()
        return cls(False, ExportCache(root) if root is not None else None, FullWhy.UPDATE)

    def plan(self, baseline: Baseline | None) -> Plan:
        return Plan(self, baseline)


class Plan:
    """One model's reuse. ``start`` (after the build) probes, keys and decides; ``reference`` and
    ``entry`` say what ``prepare`` takes; ``store`` puts an exported graph into the cache."""

    def __init__(self, policy: ReusePolicy, baseline: Baseline | None):
        self.policy, self.baseline = policy, baseline
        self.probe = None  # gate.model.trace.Probe: the torch-cpu float32 capture
        self.key = None  # gate.model.content_key.ContentKey
        self.entry: Entry | None = None
        self.sites: dict[str, OnnxSite] = {}
        self.reference = False
        self._stored: Background | None = None

    @property
    def recorded(self):
        from gate.model.content_key import ContentKey

        raw = self.baseline.meta.content_key if self.baseline is not None else None
        return ContentKey.from_dict(raw) if raw else None

    def start(self, config: Config, built, run: ModelRun, progress: Progress) -> None:
        """Probe and key ``built``; decide what is reused and say so on ``run.reuse``."""
        from gate.model import content_key, trace

        spec = built.spec
        recorded = self.recorded
        ahead = self._lookup_ahead(recorded)
        progress(f"{spec.name}: float32 forward on torch-cpu, traced (content key)")
        try:
            self.probe = trace.probe(built)
        except Exception as exc:  # noqa: BLE001 - the full path runs and reports the model's failure
            run.reuse = Reuse(None, why=FullWhy.UNKEYABLE, details=[
                f"the float32 forward failed ({type(exc).__name__}): no key can vouch for this run"])
            return
        p = self.probe
        key = content_key.take(spec, built.module, built.input_names, config.root, p.trace, p.ops,
                               built.weights_digest, built.inputs_digest, p.custom)
        self.key, run.meta.content_key = key, key.to_dict()
        run.meta.weights_digest, run.meta.tensor_digests = built.weights_digest, built.tensor_digests  # hashed by now
        changed = key.changed(recorded) if recorded is not None else []
        details = reuse_explain.details(changed, key, recorded, run.meta, self.baseline)
        why = self._why(key, recorded, p.random, spec.gradients, bool(built.training))
        if p.random:
            details.append(f"the forward draws random numbers ({', '.join(sorted(set(p.random))[:3])})")
        lookup = self._lookup(key.key, ahead)
        if why is None and spec.output_tolerance and not (lookup.entry and lookup.entry.has_outputs):
            # allclose gates on the float64 outputs: the reference runs, and its outputs go into the cache
            why = FullWhy.OUTPUTS
            if lookup.entry is not None:
                lookup = Lookup(CacheState.MISS, note="the entry holds no float64 outputs; output-tolerance needs them")
        self.reference, self.entry = why is None, lookup.entry
        run.reuse = Reuse(key.key, self.reference, lookup.state, why, changed, details, lookup.note,
                          unseen=list(p.custom))

    def _why(self, key, recorded, random: list[str], gradients: bool, training: bool) -> FullWhy | None:
        if self.policy.full_why is not None:
            return self.policy.full_why
        if self.baseline is None:
            return FullWhy.NO_BASELINE
        if recorded is None:
            return FullWhy.NO_KEY
        if random:
            return FullWhy.UNKEYABLE
        if gradients:  # the backward's code path (a custom autograd Function, a hook) is not in the key
            return FullWhy.GRADIENTS
        if training:  # the training-mode audit runs the model as given, a forward the probe (eval) never traced
            return FullWhy.TRAINING
        return None if key.key == recorded.key else FullWhy.KEY_CHANGED

    def _lookup_ahead(self, recorded) -> Background | None:
        """The entry of the baseline's key, checked on a thread while the probe runs: the key this
        run most likely has."""
        if not self.policy.read or self.policy.cache is None or recorded is None:
            return None
        return Background(self._checked, recorded.key)

    def _lookup(self, key: str, ahead: Background | None) -> Lookup:
        cache = self.policy.cache
        if cache is None:
            return Lookup(CacheState.OFF)
        if not self.policy.read:
            return Lookup(CacheState.BYPASSED)
        if ahead is not None and self.recorded is not None and self.recorded.key == key:
            return ahead.result()
        return self._checked(key)

    def _checked(self, key: str) -> Lookup:
        """The cache's lookup, its payload read too: an entry whose payload does not read is corrupt."""
        found = self.policy.cache.lookup(key)
        if found.entry is None:
            return found
        try:
            self.sites = _sites(found.entry.payload)
        except (FormatError, Corrupt) as exc:
            self.policy.cache.discard(found.entry.folder)
            return Lookup(CacheState.CORRUPT, note=f"entry {key[:12]}: {exc}")
        return found

    def exported(self):
        """The cached graph as an ``Exported``: its file, and what the export recorded (``record``);
        no calls and no graph in memory, since its layer map comes with it."""
        from gate.export.exporter import Exported

        e = self.entry.payload
        digest = e["graph_digest"]
        return Exported(None, e["exporter"], e.get("fallback"), e["opset"], {}, {}, set(), path=self.entry.model,
                        digest=Background(lambda: digest))

    def record(self, run: ModelRun, transform: str | None):
        """What ``prepare`` records of an export, from the cache entry; the graph's path."""
        e, meta = self.entry.payload, run.meta
        meta.exporter, meta.export_fallback, meta.opset = e["exporter"], e.get("fallback"), e["opset"]
        meta.op_types, meta.dynamic_dims = list(e["op_types"]), e.get("dynamic_dims") or None
        meta.transform, meta.graph_precision = transform, e.get("graph_precision")
        return self.entry.model

    def prepared(self, run: ModelRun, built, exported, model_file, sites: Callable[[list], dict]) -> Prepared:
        """The case with the reference's layers from the baseline, and the layer map from the cache
        (or, exported now, from the probe's capture: the same module calls and shapes)."""
        from gate.commands.prepare import Prepared

        b = self.baseline
        run.reference_dtype = b.reference_dtype
        # No module is in training mode (else the reference runs): no training-mode audit, whatever
        # the baseline's factory left.
        run.meta.promoted, run.meta.below_float64, run.meta.training = b.meta.promoted, b.meta.below_float64, None
        run.layers = [LayerInfo(x.name, x.type, x.fp, reached=x.reached, data_dependent=x.data_dependent)
                      for x in b.layers]
        outputs = self.entry.outputs() if self.entry is not None and self.entry.has_outputs else []
        if exported is not None:
            run.meta.graph_digest = exported.digest.result()
            run.onnx_map = dict(self.sites) if self.entry is not None else sites(self.probe.records)
        run.reuse.outputs = bool(outputs)
        prepared = Prepared(run, built, model_file, built.arrays, outputs, exported, probe=self.probe)
        self.store(prepared)
        return prepared

    def store(self, prepared: Prepared) -> None:
        """An exported graph (not one read from the cache) goes into it, on a thread: the copy and
        its checksums overlap the providers' runs. The thread holds the export's folder alive."""
        cache, exported = self.policy.cache, prepared.exported
        if cache is None or self.key is None or exported is None or self.entry is not None or prepared.run.error:
            return
        run = prepared.run
        meta = run.meta
        payload = {"model": run.name, "exporter": meta.exporter, "fallback": meta.export_fallback, "opset": meta.opset,
                   "graph_digest": meta.graph_digest, "op_types": meta.op_types, "dynamic_dims": meta.dynamic_dims,
                   "graph_precision": meta.graph_precision,
                   "onnx_map": {k: {"kind": str(s.kind), "value": s.value, "output": s.output, "reason": s.reason}
                                for k, s in run.onnx_map.items()}}
        outputs = list(prepared.outputs) if not self.reference else None

        def write(held=exported) -> bool:
            return cache.store(self.key.key, held.path, payload, outputs)

        self._stored = Background(write)

    def finish(self) -> None:
        """Wait for the cache write (its result is a saving, never a failure)."""
        if self._stored is not None:
            try:
                self._stored.result()
            except Exception:  # noqa: BLE001 - a cache that cannot be written is only a miss next time
                pass
            self._stored = None


def _sites(payload: dict) -> dict[str, OnnxSite]:
    """The layer map an entry's writer stored, every field of the payload checked first."""
    o = Obj(payload, "export cache entry")
    o.str("exporter")
    if not HEX64.match(o.str("graph_digest")):
        o.fail("graph_digest", "is not a sha256")
    for key in ("fallback", "graph_precision"):
        o.opt_str(key)
    if o.int("opset") is None:
        o.fail("opset", "expected an integer")
    if not isinstance(payload.get("op_types"), list):
        o.fail("op_types", "expected an array")
    o.strs("op_types")
    for name, dims in (o.free("dynamic_dims") or {}).items():
        if not isinstance(dims, dict) or not all(isinstance(v, str) for v in dims.values()):
            o.fail("dynamic_dims", f"{name[:60]!r}: expected an object of names")
    sites = {}
    for name, site in (o.free("onnx_map") or {}).items():
        s = Obj(site, "export cache entry", f"onnx_map.{name[:60]}")
        sites[name] = OnnxSite(s.word("kind", SiteKind), s.opt_str("value"), s.int("output"), s.opt_str("reason"))
    return sites


def recorded_keys(config: Config, models) -> str:
    """A digest of the content keys the selected models' baselines record ("none" for a model without
    one): what a CI cache of the export folder is keyed on. A check can use exactly the entries of
    these keys, so a cache saved under this digest holds what the next unchanged run needs. Reads
    only the baselines; an unreadable one counts as none (``check`` names it)."""
    import hashlib

    from gate.commands.common import location
    from gate.formats.baseline import store

    h = hashlib.sha256(b"parity-gate recorded content keys v1\n")
    for spec in models:
        try:
            baseline = store.read(location(config, spec))
        except (FileNotFoundError, FormatError):
            baseline = None
        raw = baseline.meta.content_key if baseline is not None else None
        h.update(f"{spec.name}={raw['key'] if raw else 'none'}\n".encode())
    return h.hexdigest()[:32]

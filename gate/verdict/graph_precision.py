"""A precision the configuration did not ask for is a finding, never a new baseline key: a provider whose
shipped graph computes below float32 where the baseline's did not (or whose precision class moved) is
judged against the baseline entry of its recorded precision, and fails with what changed. Where neither
graph passed through a transform or came prebuilt, a cast is the model's own code: `torch-cpu` runs it,
and its rows judge it as a model change. A precision configured that nothing computes in (``unrealized``)
is a finding too: its limits would pass a float32 runtime's faults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gate.config.providers import kind_of
from gate.config.types import PRECISION_TOLERANCE
from gate.core.runs import ModelRun, ProviderLayer, ProviderRun
from gate.core.status import AuditStatus, Check
from gate.core.target import DEFAULT_PRECISION, REFERENCE_PROVIDER
from gate.formats.baseline import Baseline, Entry, EntryLayer
from gate.verdict.rows import Audit

SHOWN = 3  # items named in the message; the rest are counted
# A runtime computing in a precision errs by about its floor; one whose every error is this far under it, or
# within ``AS_FLOAT32`` times torch-cpu's float32 errors, computed in float32.
FINER, AS_FLOAT32 = 100, 10


@dataclass(frozen=True)
class PrecisionChange:
    before: str  # the precision class the baseline's graph computed in
    now: str  # the one the shipped graph computes in
    added: tuple[str, ...]  # what computes below float32 now and did not in the baseline's graph

    def audit(self, provider: str) -> Audit:
        more = len(self.added) - SHOWN
        shown = "; ".join(self.added[:SHOWN]) + (f"; and {more} more" if more > 0 else "")
        moved = f"the shipped graph now computes in {self.now}, the baseline's in {self.before}" \
            if self.now != self.before else "the shipped graph computes below float32 where the baseline's " \
            "did not"
        what = f" ({len(self.added)} new: {shown})" if self.added else ""
        return Audit(Check.PRECISION, AuditStatus.FAIL, f"{provider}: {moved}{what}; no precision configured "
                     f"for {provider} asks for it, so it is judged against its {self.before} baseline")


def change(run: ModelRun, baseline: Baseline, prun: ProviderRun,
           configured: Iterable[str]) -> PrecisionChange | None:
    """What the graph ``prun`` ran now computes below float32 that nobody configured, or None. An ONNX
    Runtime provider only: PyTorch runs the model, not the graph."""
    if kind_of(prun.name).torch or run.meta.lowered is None:
        return None
    if run.meta.graph_precision is None and baseline.meta.graph_precision is None:
        return None  # both the model's own export, no transform: its code casts, and torch-cpu runs that code
    before = baseline.meta.graph_precision or DEFAULT_PRECISION
    now = run.meta.graph_precision or DEFAULT_PRECISION
    recorded = baseline.meta.lowered
    added = tuple(x for x in (run.meta.lowered or []) if recorded is not None and x not in set(recorded))
    if now != before and now not in set(configured):
        return PrecisionChange(before, now, added or tuple(run.meta.lowered or ()))
    return PrecisionChange(before, now, added) if added and now == before else None


def unrealized(run: ModelRun, prun: ProviderRun, entry: Entry | None = None) -> Audit | None:
    """A precision configured for an ONNX Runtime provider that nothing computes in: its graph computes in
    float32 (no ``lowered`` node), and its errors now, or those its baseline ``entry`` recorded, are
    float32's, not that precision's; its limits (a float16 floor of 1e-3) would pass faults a float32
    runtime is held to (a fault's own error cannot earn the label). Where nothing erred, nothing tells."""
    if kind_of(prun.name).torch or prun.precision not in PRECISION_TOLERANCE or run.meta.lowered != []:
        return None
    torch32 = [AS_FLOAT32 * _largest(p.layers) for p in run.providers
               if p.name == REFERENCE_PROVIDER and p.precision == DEFAULT_PRECISION]
    bound = max([PRECISION_TOLERANCE[prun.precision]["floor"] / FINER, *torch32])
    errors = (_largest(prun.layers), _largest(entry.layers if entry else {}))
    most = next((e for e in errors if 0 < e <= bound), None)
    if most is None:
        return None
    return Audit(Check.PRECISION_LABEL, AuditStatus.FAIL,
                 f"{prun.name}: configured as {prun.precision}, but its graph computes in float32 and its "
                 f"errors are float32's (largest {most:.3g}): nothing computes in {prun.precision}, so its "
                 f"limits would pass faults; configure float32 for it, or the option that selects "
                 f"{prun.precision}, and record its baseline")


def _largest(layers: Mapping[str, ProviderLayer | EntryLayer]) -> float:
    errors = [x.err for x in layers.values() if x.err is not None and x.err < float("inf")]
    return max(errors, default=0.0)

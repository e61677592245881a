"""A precision the configuration did not ask for is a finding, never a new baseline key: a provider whose
shipped graph computes below float32 where the baseline's did not (or whose precision class moved) is
judged against the baseline entry of its recorded precision, and fails with what changed. Where neither
graph passed through a transform or came prebuilt, a cast is the model's own code: `torch-cpu` runs it,
and its rows judge it as a model change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gate.config.providers import kind_of
from gate.core.runs import ModelRun, ProviderRun
from gate.core.status import AuditStatus, Check
from gate.core.target import DEFAULT_PRECISION
from gate.formats.baseline import Baseline
from gate.verdict.types import Audit

SHOWN = 3  # items named in the message; the rest are counted


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

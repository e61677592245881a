"""How statuses roll up: a target from its first regression, a model from its targets and its own
evidence, the verdict from the models. The judge decides them here, and so does ``gate.github.recheck``
when it re-decides a report it does not trust; ``worse`` is the one order of severity."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TypeVar

from gate.core.status import AuditStatus, ComparisonStatus, ModelStatus, TargetStatus, Verdict
from gate.verdict.types import ModelVerdict, ProviderVerdict

# Severity, least to most: a status is replaced only by a worse one.
_SEVERITY: dict[Enum, int] = {
    TargetStatus.PASS: 0, TargetStatus.SKIPPED: 0, TargetStatus.NO_BASELINE: 1, TargetStatus.REGRESSED: 2,
    TargetStatus.ERROR: 3,
    ModelStatus.PASS: 0, ModelStatus.NO_BASELINE: 1, ModelStatus.REGRESSED: 2, ModelStatus.ERROR: 3,
    Verdict.PASS: 0, Verdict.REGRESSED: 1, Verdict.ERROR: 2,
}

S = TypeVar("S", TargetStatus, ModelStatus, Verdict)


def worse(found: S, written: S) -> bool:
    return _SEVERITY[found] > _SEVERITY[written]


def target_status(pv: ProviderVerdict) -> TargetStatus:
    """A target that failed to run (its status, or how it failed) is an error; one with a first
    regression regressed; otherwise what its run made it (pass, skipped, no baseline)."""
    if pv.status == TargetStatus.ERROR or pv.error_status is not None:
        return TargetStatus.ERROR
    return TargetStatus.REGRESSED if pv.first_regression is not None else TargetStatus(pv.status)


def model_status(m: ModelVerdict) -> ModelStatus:
    """An error when the model or a target failed; regressed with a first regression, a regressed
    target, a failing audit or a failing comparison; no baseline when the model or a target has none."""
    targets = {p.status for p in m.providers}
    if m.error is not None or TargetStatus.ERROR in targets:
        return ModelStatus.ERROR
    if (m.first_regression is not None or TargetStatus.REGRESSED in targets
            or any(a.status == AuditStatus.FAIL for a in m.audits)
            or any(c.status == ComparisonStatus.FAIL for c in m.comparisons)):
        return ModelStatus.REGRESSED
    if TargetStatus.NO_BASELINE in targets or (m.baseline_path and not m.baseline_exists):
        return ModelStatus.NO_BASELINE
    return ModelStatus.PASS


def verdict(models: Iterable[ModelVerdict]) -> Verdict:
    """An error when a model is; regressed when one regressed or has no baseline; else a pass."""
    statuses = {m.status for m in models}
    if ModelStatus.ERROR in statuses:
        return Verdict.ERROR
    if statuses & {ModelStatus.REGRESSED, ModelStatus.NO_BASELINE}:
        return Verdict.REGRESSED
    return Verdict.PASS

"""A report's verdict decided again from its own evidence, never better than written.

The report a comment job reads may come from a run of the pull request's code (the fork flow's
artifact), which can write any verdict. Nothing here can run the model again, so the measurements
stand as measured; but every status that only summarizes them is decided again from the rows,
audits and comparisons under it: a failed row, or a passing row over its threshold, regresses its
target; a regressed or failed target its model, as does a baseline the report names and says is
missing; and the models the verdict (``assemble``, the judge's own rule). A status is only ever made worse, and each one made worse is a
``Contradiction`` the comment shows. A report that holds no model judged nothing: an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gate.core.status import AuditStatus, ComparisonStatus, ModelStatus, RowStatus, TargetStatus, Verdict
from gate.render.text import code
from gate.verdict.judge import assemble
from gate.verdict.types import ModelVerdict, ProviderVerdict, Regression, Report, Row, Summary

_TARGET = {TargetStatus.PASS: 0, TargetStatus.SKIPPED: 0, TargetStatus.NO_BASELINE: 1, TargetStatus.REGRESSED: 2,
           TargetStatus.ERROR: 3}
_MODEL = {ModelStatus.PASS: 0, ModelStatus.NO_BASELINE: 1, ModelStatus.REGRESSED: 2, ModelStatus.ERROR: 3}
_VERDICT = {Verdict.PASS: 0, Verdict.REGRESSED: 1, Verdict.ERROR: 2}
MAX_SHOWN = 10


@dataclass(frozen=True)
class Contradiction:
    """A status the report wrote better than its evidence: ``model`` (and ``provider``, for a target;
    both None for the verdict) said ``claimed``, its evidence says ``found``."""

    model: str | None
    provider: str | None
    claimed: str
    found: str


def _over(row: Row) -> bool:
    """A passing row whose value exceeds its threshold (no check the writer knows passes such a row)."""
    v, t = row.value, row.threshold
    return row.status == RowStatus.PASS and v is not None and t is not None and math.isfinite(v) and \
        math.isfinite(t) and v > t


def _target(p: ProviderVerdict) -> TargetStatus:
    failing = [r for r in p.rows if r.failed or _over(r)]
    if failing and p.first_regression is None:
        p.first_regression = Regression.of(failing[0])
    if failing or p.first_regression is not None or any(a.status == AuditStatus.FAIL for a in p.audits):
        return TargetStatus.REGRESSED
    return TargetStatus(p.status)


def _model(m: ModelVerdict) -> ModelStatus:
    statuses = {p.status for p in m.providers}
    if m.error is not None or TargetStatus.ERROR in statuses:
        return ModelStatus.ERROR
    lead = next((p for p in m.providers if p.status == TargetStatus.REGRESSED and p.first_regression), None)
    if lead is not None and m.first_regression is None:
        m.first_regression = Regression(**{**vars(lead.first_regression), "provider": lead.name,
                                           "precision": lead.precision})
    if lead is not None or m.first_regression is not None or \
            any(a.status == AuditStatus.FAIL for a in m.audits) or \
            any(c.status == ComparisonStatus.FAIL for c in m.comparisons):
        return ModelStatus.REGRESSED
    if TargetStatus.NO_BASELINE in statuses or (m.baseline_path and not m.baseline_exists):
        return ModelStatus.NO_BASELINE
    return ModelStatus(m.status)


def recheck(report: Report) -> list[Contradiction]:
    """Make ``report``'s statuses and verdict at least as bad as its evidence (in place); what changed."""
    found: list[Contradiction] = []
    for m in report.models:
        for p in m.providers:
            status = _target(p)
            if _TARGET[status] > _TARGET[TargetStatus(p.status)]:
                found.append(Contradiction(m.name, p.name, str(p.status), str(status)))
                p.status = status
        status = _model(m)
        if _MODEL[status] > _MODEL[ModelStatus(m.status)]:
            found.append(Contradiction(m.name, None, str(m.status), str(status)))
            m.status = status
    judged = assemble(report.models, report.environment)
    verdict = judged.verdict if report.models else Verdict.ERROR
    if _VERDICT[verdict] > _VERDICT[Verdict(report.verdict)]:
        found.append(Contradiction(None, None, str(report.verdict), str(verdict)))
        report.verdict = verdict
    if report.first_regression is None:
        report.first_regression = judged.first_regression
    report.summary = Summary.of(report.models)  # counted from the models, not as written
    return found


def caution(found: list[Contradiction]) -> str:
    """The block that leads the comment when the report claimed better than its evidence (Markdown)."""
    if not found:
        return ""
    lines = ["> [!CAUTION]", "> **The report claims more than its own rows show; it is judged by the rows:**"]
    for c in found[:MAX_SHOWN]:
        what = " · ".join(code(x, 80) for x in (c.model, c.provider) if x) or "the verdict"
        lines.append(f"> - {what}: written {code(c.claimed, 20)}, its evidence says {code(c.found, 20)}")
    if len(found) > MAX_SHOWN:
        lines.append(f"> - … and {len(found) - MAX_SHOWN} more")
    return "\n".join(lines)

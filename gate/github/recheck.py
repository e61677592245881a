"""A report's verdict decided again from its own evidence, never better than written: a fork's run can
write any verdict. The measurements stand; every status that summarizes them is rolled up again from
the rows, audits and comparisons (``gate.verdict.rollup``), and each one made worse is a
``Contradiction`` the comment shows. A report that holds no model, or a model without its float64
reference's rows, judged nothing: an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gate.core.status import (
    AuditStatus,
    Check,
    ComparisonStatus,
    ModelStatus,
    Role,
    RowStatus,
    TargetStatus,
    Verdict,
)
from gate.core.target import REFERENCE_PROVIDER
from gate.render.text import code
from gate.verdict import rollup
from gate.verdict.judge import assemble, audit_regression, comparison_regression
from gate.verdict.rows import Regression, Row
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report, Summary

MAX_SHOWN = 10


@dataclass(frozen=True)
class Contradiction:
    """A status the report wrote better than its evidence: ``model`` (and ``provider``, for a target;
    both None for the verdict) said ``claimed``, its evidence says ``found``."""

    model: str | None
    provider: str | None
    claimed: str
    found: str


def _over(row: Row, moved: bool) -> bool:
    """A passing row whose value exceeds its threshold (no check the writer knows passes such a row), or one
    that "follows" a model change where the reference failed nowhere (``moved``: it did)."""
    v, t = row.value, row.threshold
    passing = row.status == RowStatus.PASS or (row.status == RowStatus.FOLLOWS and not moved)
    return passing and v is not None and t is not None and math.isfinite(v) and math.isfinite(t) and v > t


def _evidence(p: ProviderVerdict, moved: bool) -> None:
    """A target's first regression from its own rows and audits, where the report left none."""
    if p.first_regression is not None:
        return
    failing = next((r for r in p.rows if r.failed or _over(r, moved)), None)
    audit = next((a for a in p.audits if a.status == AuditStatus.FAIL), None)
    if failing is not None:
        p.first_regression = Regression.of(failing)
    elif audit is not None:
        p.first_regression = Regression("(model)", "", audit.check, message=audit.message)


def _lead(m: ModelVerdict) -> None:
    """A model's first regression, where the report left none: its first failing model audit (before
    any layer), else its first regressed target's, else its first failing comparison (the outputs)."""
    if m.first_regression is not None:
        return
    audit = next((a for a in m.audits if a.status == AuditStatus.FAIL and a.check != Check.CONTRADICTION), None)
    lead = next((p for p in m.providers if p.status == TargetStatus.REGRESSED and p.first_regression), None)
    compared = next((c for c in m.comparisons if c.status == ComparisonStatus.FAIL), None)
    if audit is not None:
        m.first_regression = audit_regression(audit)
    elif lead is not None and lead.first_regression is not None:
        m.first_regression = Regression(**{**vars(lead.first_regression), "provider": lead.name,
                                           "precision": lead.precision})
    elif compared is not None:
        m.first_regression = comparison_regression(compared)


def _unjudged(m: ModelVerdict) -> bool:
    """A model whose float64 reference is absent, skipped or without rows: the judge writes it for
    every model it runs and never skips it, so a pass without it was edited."""
    refs = [p for p in m.providers if p.role == Role.REFERENCE]
    return len(refs) != 1 or refs[0].status == TargetStatus.SKIPPED or not refs[0].rows


def recheck(report: Report) -> list[Contradiction]:
    """Make ``report``'s statuses and verdict at least as bad as its evidence (in place); what changed."""
    found: list[Contradiction] = []
    for m in report.models:
        moved = any(r.failed for p in m.providers if p.role == Role.REFERENCE for r in p.rows)
        for p in m.providers:
            _evidence(p, moved)
            target = rollup.target_status(p)
            if rollup.worse(target, TargetStatus(p.status)):
                found.append(Contradiction(m.name, p.name, str(p.status), str(target)))
                p.status = target
        _lead(m)
        model = rollup.model_status(m)
        unjudged = model == ModelStatus.PASS and _unjudged(m)
        model = ModelStatus.ERROR if unjudged else model
        if rollup.worse(model, ModelStatus(m.status)):
            where = REFERENCE_PROVIDER if unjudged else None
            found.append(Contradiction(m.name, where, str(m.status), str(model)))
            m.status = model
    judged = assemble(report.models, report.environment)
    verdict = judged.verdict if report.models else Verdict.ERROR
    if rollup.worse(verdict, Verdict(report.verdict)):
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

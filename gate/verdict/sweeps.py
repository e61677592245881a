"""The support matrix of a sweep: one row per case, one column per runtime, one cell each. The cases are
judged as models (``judge.model_verdict``); this only arranges their verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.core.spans import span
from gate.core.status import (
    RUNTIME_ERROR_CHECKS,
    CellStatus,
    ComparisonStatus,
    ModelStatus,
    Role,
    TargetStatus,
)

from .notes import Comparison
from .types import ModelVerdict, ProviderVerdict

CELL_STATUSES = CellStatus.values()  # or the ErrorStatus of a model or target that failed
WHOLE = "(model)"  # the column of a matrix none of whose cases ran a runtime


@dataclass
class Cell:
    status: str  # CELL_STATUSES or an ErrorStatus
    reason: str | None = None
    error: float | None = None  # worst relative L2 error against the float64 reference over the case's layers
    latency_ms: float | None = None  # median over the configured repeats
    latency_p90_ms: float | None = None
    anchor_error: float | None = None  # outputs against the sweep's anchor provider, where it has one

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, CellStatus.ERROR: self.error,
                "latency_ms": self.latency_ms, "latency_p90_ms": self.latency_p90_ms,
                **({"anchor_error": self.anchor_error} if self.anchor_error is not None else {})}


@dataclass
class SweepMatrix:
    name: str
    providers: list[str] = field(default_factory=list)  # column labels, in report order
    cases: list[tuple[str, dict[str, Cell]]] = field(default_factory=list)
    pairs: list[tuple[str, Comparison]] = field(default_factory=list)  # (left case, its comparison)

    @property
    def failing(self) -> list[str]:
        cells_bad = [case for case, cells in self.cases if any(c.status not in (CellStatus.OK, CellStatus.SKIPPED) for c in cells.values())]
        pairs_bad = [left for left, c in self.pairs if c.status == ComparisonStatus.FAIL and left not in cells_bad]
        return cells_bad + list(dict.fromkeys(pairs_bad))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "providers": self.providers,
                "cases": [{"case": case, "cells": {k: c.to_dict() for k, c in cells.items()}}
                          for case, cells in self.cases],
                "pairs": [{"left": left, "right": c.other, "provider": c.provider, "error": c.error,
                           "tolerance": c.tolerance, "status": c.status} for left, c in self.pairs]}


def column(p: ProviderVerdict) -> str:
    return p.name if p.precision == "float32" else f"{p.name}:{p.precision}"


def cell(m: ModelVerdict, p: ProviderVerdict | None) -> Cell:
    if m.status == ModelStatus.ERROR and (p is None or p.status != TargetStatus.SKIPPED):
        return Cell(m.error.error_status, m.error.message) if m.error else Cell(CellStatus.ERROR)
    if p is None:
        return Cell(CellStatus.SKIPPED, "no result for this provider")
    worst = max((r.value for r in p.rows if r.check in RUNTIME_ERROR_CHECKS and r.value is not None),
                default=None)
    if p.status == TargetStatus.SKIPPED:
        return Cell(CellStatus.SKIPPED, p.reason)
    if p.status == TargetStatus.ERROR:
        return Cell(p.error_status or CellStatus.ERROR, p.reason)
    placement = p.placement or {}
    status = {TargetStatus.PASS: CellStatus.OK, TargetStatus.REGRESSED: CellStatus.REGRESSED,
              TargetStatus.NO_BASELINE: CellStatus.NO_BASELINE}.get(p.status, CellStatus.ERROR)
    fr = next((r.first_regression for r in m.providers if r.role == Role.REFERENCE and r.first_regression is not None),
              None)
    if status == CellStatus.OK and fr is not None:  # the case itself changed: every provider's cell says so
        return Cell(CellStatus.REGRESSED, f"the float64 reference moved at {span(fr.layer)} ({fr.check})", worst, p.latency_ms,
                    p.latency_p90_ms)
    if status == CellStatus.OK and placement.get("fallback_nodes"):
        status = CellStatus.FALLBACK
    reason = p.first_regression.message if p.first_regression is not None else None
    if status == CellStatus.OK and m.status == ModelStatus.NO_BASELINE:  # judged against the ceiling only
        status, reason = CellStatus.NO_BASELINE, m.message
    if status == CellStatus.FALLBACK:
        reason = f"{len(placement['fallback_nodes'])} node(s) fell back: {', '.join(placement['fallback_ops'][:3])}"
    return Cell(status, reason, worst, p.latency_ms, p.latency_p90_ms)


def _anchor(cell: Cell, c: Comparison) -> None:
    cell.anchor_error = c.error
    if c.status == ComparisonStatus.FAIL and cell.status == CellStatus.OK:
        cell.status, cell.reason = CellStatus.REGRESSED, f"outputs differ from anchor {span(c.other)} by {c.error:.3g}"


def matrices(models: list[ModelVerdict]) -> list[SweepMatrix]:
    """One matrix per sweep, in the order its cases appear; configured models are not in any. A
    provider a case has no verdict for (its export failed, a merged report lacks it) shows why."""
    out: dict[str, tuple[SweepMatrix, list[ModelVerdict]]] = {}
    for m in models:
        if m.sweep:
            mx, cases = out.setdefault(m.sweep, (SweepMatrix(m.sweep), []))
            cases.append(m)
            for p in m.providers:
                if p.role == Role.RUNTIME and column(p) not in mx.providers:
                    mx.providers.append(column(p))
    for mx, cases in out.values():
        if not mx.providers and any(m.status == ModelStatus.ERROR for m in cases):
            mx.providers.append(WHOLE)  # no case ran a runtime: one column, so that a failed case says so
        for m in cases:
            runtimes = {column(p): p for p in m.providers if p.role == Role.RUNTIME}
            cells = {label: cell(m, runtimes.get(label)) for label in mx.providers}
            for c in m.comparisons:
                if c.kind == "pair":
                    mx.pairs.append((m.name, c))
                elif c.provider in cells:
                    _anchor(cells[c.provider], c)
            mx.cases.append((m.name, cells))
    return [mx for mx, _ in out.values()]

"""gate.github.recheck: a report's statuses decided again from its own rows, never made better."""

from __future__ import annotations

from pathlib import Path

from gate.core.status import ModelStatus, TargetStatus, Verdict
from gate.github.recheck import Contradiction, recheck
from gate.verdict.report_file import load_report

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"


def test_reports_the_writer_wrote_hold_no_contradiction():
    for name in ("pass", "regressed", "export-fail", "real-check-reference-drift"):
        report = load_report(REPORTS / f"{name}.json")
        verdict = report.verdict
        assert recheck(report) == [] and report.verdict == verdict, name


def test_a_status_is_never_made_better():
    report = load_report(REPORTS / "pass.json")
    report.verdict = Verdict.ERROR
    report.models[0].providers[0].status = TargetStatus.ERROR
    # Its rows pass, yet the target stays an error, and its model follows it.
    assert recheck(report) == [Contradiction("tiny-cnn", None, "pass", "error")]
    assert report.models[0].providers[0].status == TargetStatus.ERROR and report.verdict == Verdict.ERROR


def test_a_skipped_target_with_a_failed_row_regressed():
    report = load_report(REPORTS / "regressed.json")
    p = report.models[0].providers[1]
    p.status, p.first_regression = TargetStatus.SKIPPED, None
    found = recheck(report)
    assert found == [Contradiction("tiny-cnn", "CPUExecutionProvider", "skipped", "regressed")]
    assert p.first_regression is not None and p.first_regression.layer == "conv2"
    assert report.models[0].status == ModelStatus.REGRESSED


def test_a_model_without_its_references_rows_judged_nothing():
    """A leg's report edited to drop the model's targets, or to skip them all, the float64 reference
    included, claimed a pass for a model nothing judged: an error. Its twin, the report as written, holds."""
    for edit in ("dropped", "skipped", "empty"):
        report = load_report(REPORTS / "regressed.json")
        m = report.models[0]
        if edit == "dropped":
            m.providers = []
        for p in m.providers:
            p.status = TargetStatus.SKIPPED if edit == "skipped" else TargetStatus.PASS
            p.first_regression = None
            p.rows = []
        m.status, m.first_regression, m.audits, m.hints = ModelStatus.PASS, None, [], []
        report.verdict, report.first_regression = Verdict.PASS, None
        found = recheck(report)
        assert Contradiction("tiny-cnn", "torch-cpu", "pass", "error") in found, edit
        assert (m.status, report.verdict) == (ModelStatus.ERROR, Verdict.ERROR), edit


def test_rows_that_follow_a_model_change_no_row_failed_are_evidence():
    """`follows` marks a row that moved with a change the reference failed at first: a report whose every
    failing reference row was rewritten `follows`, and its statuses `pass`, claims a cause nothing names.
    Twin: the report as written (one failing row, the rest following it) holds."""
    report = load_report(REPORTS / "real-check-reference-drift.json")
    ref = report.models[0].providers[0]
    for r in ref.rows[1:]:
        r.status = "follows" if r.failed else r.status
    assert recheck(report) == []
    for r in ref.rows:
        r.status = "follows" if r.failed else r.status
    ref.status, ref.first_regression = TargetStatus.PASS, None
    m = report.models[0]
    m.status, m.first_regression = ModelStatus.PASS, None
    report.verdict, report.first_regression = Verdict.PASS, None
    found = recheck(report)
    assert Contradiction("tiny-cnn", "torch-cpu", "pass", "regressed") in found
    assert report.verdict == Verdict.REGRESSED

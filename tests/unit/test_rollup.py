"""One roll-up (gate.verdict.rollup): the judge decides a report's statuses, and ``recheck``, handed
the same report with every summarizing status written as a pass, decides them again from the rows,
audits and comparisons alone. Both paths get the same cases and must agree: targets, models, first
regressions and the verdict. Runs and baselines built by hand (tests/support/verdicts.py)."""

from __future__ import annotations

import json

import pytest

from gate.core.runs import RunError
from gate.core.status import (
    Check,
    ComparisonStatus,
    ErrorStatus,
    ModelStatus,
    RunStatus,
    TargetStatus,
    Verdict,
)
from gate.github.recheck import recheck
from gate.verdict import rollup
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.notes import Comparison
from gate.verdict.report_file import parse_report, report_document
from gate.verdict.types import Report
from tests.support.verdicts import baseline, entry, run, runtime, spec

PATH, UPDATE = "baselines/m.msgpack.zst", "parity-gate update-baseline --model m"


def _case(name: str):
    r, b = run(), baseline(entry())
    comparisons = []
    if name == "reference drift":
        r = run(moves={"b": 0.5})
    elif name == "runtime drift":
        r.providers.append(runtime(errs={"c": 0.2}))
    if name != "runtime drift":
        r.providers.append(runtime())
    if name == "no baseline":
        b = None
    elif name == "runtime with no entry":
        b = baseline()
    elif name == "model failed":
        r.error = RunError(ErrorStatus.INFER_FAIL, "boom")
    elif name == "runtime failed":
        r.providers[-1] = runtime(status=RunStatus.ERROR, error_status=ErrorStatus.INFER_FAIL, reason="boom")
    elif name == "outputs differ from their pair":
        comparisons = [Comparison(Check.PAIR, "torch-cpu", "other", 0.1, 1e-3, ComparisonStatus.FAIL)]
    return model_verdict(spec(), r, b, PATH, UPDATE, comparisons=comparisons)


CASES = ["pass", "reference drift", "runtime drift", "no baseline", "runtime with no entry", "model failed",
         "runtime failed", "outputs differ from their pair"]


def _written_as_a_pass(report: Report, no_baseline_targets: bool = False) -> Report:
    """The report as a run of the pull request's code could write it: every summary a pass, a failed
    target's too (how it failed, ``error_status``, is what its run measured and stays); a skip stays;
    ``no_baseline_targets``: a target without a baseline written as a pass too (the model's own
    ``baseline_exists`` still says it has none)."""
    doc = report_document(report)
    doc["verdict"], doc["first_regression"] = "pass", None
    for m in doc["models"]:
        m["status"], m["first_regression"] = "pass", None
        for p in m["providers"]:
            written_down = p["status"] in ("regressed", "error")
            if written_down or (no_baseline_targets and p["status"] == "no-baseline"):
                p["status"], p["first_regression"] = "pass", None
    return parse_report(json.dumps(doc).encode(), "written.json")


def _statuses(report: Report):
    first = report.first_regression
    return (report.verdict, [(m.status, m.first_regression and (m.first_regression.layer, m.first_regression.provider),
                              [(p.name, p.status) for p in m.providers]) for m in report.models],
            first and (first.model, first.layer, first.provider))


@pytest.mark.parametrize("case", CASES)
def test_recheck_decides_what_the_judge_decided_from_the_same_evidence(case):
    judged = assemble([_case(case)], {})
    assert recheck(parse_report(json.dumps(report_document(judged)).encode(), "judged.json")) == []
    again = _written_as_a_pass(judged)
    found = recheck(again)
    assert _statuses(again) == _statuses(judged)
    assert bool(found) is (judged.verdict != Verdict.PASS)


def test_recheck_derives_every_status_it_decides_from_evidence():
    """Across the cases, recheck makes worse every status that only summarizes: a target regressed by
    its rows, a model in error (its own error, a target's), regressed or without a baseline, and each
    verdict but a pass. A case list that stopped reaching one fails here."""
    derived = set()
    for case in CASES:
        for c in recheck(_written_as_a_pass(assemble([_case(case)], {}))):
            level = "verdict" if c.model is None else "model" if c.provider is None else "target"
            derived.add((level, c.found))
    models = {("model", s) for s in ModelStatus if s != ModelStatus.PASS}
    verdicts = {("verdict", v) for v in Verdict if v != Verdict.PASS}
    assert derived == {("target", TargetStatus.REGRESSED), ("target", TargetStatus.ERROR)} | models | verdicts


@pytest.mark.parametrize("case, status, verdict", [
    ("model failed", ModelStatus.ERROR, Verdict.ERROR),  # every target passed: the model's own error
    ("no baseline", ModelStatus.NO_BASELINE, Verdict.REGRESSED),  # every target written a pass
    ("runtime with no entry", ModelStatus.NO_BASELINE, Verdict.REGRESSED),  # the target's, as measured
    ("runtime failed", ModelStatus.ERROR, Verdict.ERROR),  # the target's error, from how it failed
])
def test_recheck_finds_an_error_or_a_missing_baseline_written_as_a_pass(case, status, verdict):
    written = _written_as_a_pass(assemble([_case(case)], {}), no_baseline_targets=case == "no baseline")
    assert written.verdict == Verdict.PASS and written.models[0].status == ModelStatus.PASS
    found = recheck(written)
    assert (written.models[0].status, written.verdict) == (status, verdict)
    assert ("m", None, "pass", str(status)) in [(c.model, c.provider, c.claimed, c.found) for c in found]
    assert (None, None, "pass", str(verdict)) in [(c.model, c.provider, c.claimed, c.found) for c in found]


def test_every_case_is_a_different_roll_up():
    """The cases cover each model status and each verdict (a case list that shrank would pass)."""
    judged = [_case(c) for c in CASES]
    assert {m.status for m in judged} == set(ModelStatus)
    assert {assemble([m], {}).verdict for m in judged} == set(Verdict)
    assert {p.status for m in judged for p in m.providers} >= {TargetStatus.PASS, TargetStatus.REGRESSED,
                                                                TargetStatus.NO_BASELINE, TargetStatus.ERROR}


@pytest.mark.parametrize("found, written, worse", [
    (TargetStatus.REGRESSED, TargetStatus.SKIPPED, True), (TargetStatus.SKIPPED, TargetStatus.PASS, False),
    (ModelStatus.NO_BASELINE, ModelStatus.PASS, True), (ModelStatus.REGRESSED, ModelStatus.ERROR, False),
    (Verdict.ERROR, Verdict.REGRESSED, True), (Verdict.PASS, Verdict.PASS, False),
])
def test_severity_is_one_order(found, written, worse):
    assert rollup.worse(found, written) is worse

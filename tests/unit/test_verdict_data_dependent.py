"""gate.verdict.data_dependent: layers whose shape depends on values, each rule at its limit (passes)
and just past it (fails), on runs, baselines and matched detections built by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from gate.config import DetectionTolerance, Tolerance
from gate.core.detections import Detections
from gate.core.fields import Obj
from gate.core.runs import LayerInfo, ProviderRun
from gate.core.status import DataDependence
from gate.core.target import Target
from gate.fingerprint import fingerprint
from gate.formats.baseline import EntryLayer
from gate.verdict.checks import runtime_rows
from gate.verdict.data_dependent import detections_row, distribution_row, recognize, recorded_row
from gate.verdict.judge import model_verdict
from gate.verdict.rows import Row
from tests.support.verdicts import baseline, entry, fp, run, runtime, spec

JUST_PAST = 1 + 1e-9
LAYER = LayerInfo("(model)[0][boxes]", "Detector", fp())
TOL = DetectionTolerance(min_score=0.5, iou=0.9, score=0.01)


def facts(pairs=((0.9, 0.9, 1.0), (0.7, 0.7, 1.0)), missing=(), extra=(), errors=None) -> Detections:
    masks = {"(model)[0][masks]": tuple(errors)} if errors is not None else {}
    return Detections("(model)[0][boxes]", "(model)[0][scores]", "(model)[0][labels]", tuple(masks),
                      len(pairs) + len(missing), len(pairs) + len(extra), tuple(pairs), tuple(missing), tuple(extra),
                      masks)


def member(role: str) -> LayerInfo:
    return replace(LAYER, name=f"(model)[0][{role}]")


# detections ----------------------------------------------------------------------------------

@pytest.mark.parametrize("past", [False, True])
def test_a_confident_detection_left_unmatched_fails_from_min_score_on(past):
    score = TOL.min_score if past else TOL.min_score / JUST_PAST
    for d in (facts(missing=(score,)), facts(extra=(score,))):
        for role in ("boxes", "labels"):
            row = detections_row(member(role), d, TOL, 1e-2)
            assert (row.check, row.failed, row.value, row.threshold) == ("detections", past, float(past), 0.0)
    if past:
        assert "with score ≥ 0.5: 1 of the reference's unmatched (highest score 0.5)" in \
            detections_row(LAYER, facts(missing=(score,)), TOL, 1e-2).message


@pytest.mark.parametrize("past", [False, True])
def test_a_confident_pair_must_overlap_by_iou(past):
    iou = TOL.iou / JUST_PAST if past else TOL.iou
    row = detections_row(LAYER, facts(pairs=((0.9, 0.9, iou),)), TOL, 1e-2)
    assert row.failed is past
    # below min-score a pair may overlap by as little as the match itself (0.5)
    assert not detections_row(LAYER, facts(pairs=((0.4, 0.45, 0.5),)), TOL, 1e-2).failed


@pytest.mark.parametrize("past", [False, True])
def test_matched_confident_scores_differ_by_at_most_score(past):
    tol = replace(TOL, score=0.125)  # 0.75 - 0.625: exact in binary
    actual = 0.625 - 1e-9 if past else 0.625
    row = detections_row(member("scores"), facts(pairs=((0.75, actual, 1.0), (0.3, 0.1, 1.0))), tol, 1e-2)
    assert (row.value, row.threshold, row.failed) == (0.75 - actual, 0.125, past)


@pytest.mark.parametrize("past", [False, True])
def test_a_per_detection_attribute_is_held_to_the_ceiling_over_confident_pairs(past):
    err = 1e-2 * JUST_PAST if past else 1e-2
    d = facts(pairs=((0.9, 0.9, 1.0), (0.2, 0.2, 1.0)), errors=(err, 5.0))  # the unconfident pair's error is ignored
    row = detections_row(member("masks"), d, TOL, 1e-2)
    assert (row.value, row.failed) == (err, past)


def test_nothing_confident_on_either_side_passes_and_says_so():
    row = detections_row(LAYER, facts(pairs=((0.1, 0.1, 0.6),), missing=(0.4,), extra=(0.49,)), TOL, 1e-2)
    assert not row.failed and "none scores ≥ 0.5 on either side" in row.message


# distribution and recorded ---------------------------------------------------------------------

def values(n: int, shift: float = 0.0, order=slice(None)):
    return fingerprint((np.linspace(0.0, 8.0, n) + shift)[order])  # steps of 0.5 for n = 17: exact in binary


@pytest.mark.parametrize("past", [False, True])
def test_distribution_compares_quantiles_and_mean_relative_to_the_largest_magnitude(past):
    ref = values(17)
    limit = 0.0625 / 8.0  # every value shifted by 0.0625, of values reaching 8
    row = distribution_row(LAYER, "CPUExecutionProvider", values(17, 0.0625, slice(None, None, -1)), ref,
                           limit / JUST_PAST if past else limit)  # in another order: a set has none
    assert (row.check, row.value, row.failed) == ("distribution", limit, past)
    assert "CPUExecutionProvider [17], reference [17]" in row.message


def test_distribution_fails_on_nan_one_side_has_and_on_one_empty_side():
    ref = values(17)
    nan = fingerprint(np.array([1.0, np.nan]))
    assert (distribution_row(LAYER, "p", nan, ref, 1.0).check, distribution_row(LAYER, "p", nan, ref, 1.0).failed) == \
        ("nonfinite", True)
    empty = fingerprint(np.zeros(0))
    assert distribution_row(LAYER, "p", empty, ref, 1.0).failed
    assert not distribution_row(LAYER, "p", empty, empty, 1.0).failed


@pytest.mark.parametrize("past", [False, True])
def test_recorded_holds_a_runtime_to_what_its_entry_recorded(past):
    base = values(17)
    floor = 0.0625 / 8.0
    row = recorded_row(LAYER, "torch-cpu", values(17, 0.0625), EntryLayer("ok", None, base),
                       floor / JUST_PAST if past else floor)
    assert (row is None) is past
    if not past:
        assert (row.check, row.failed, row.value) == ("recorded", False, floor)
    assert recorded_row(LAYER, "torch-cpu", values(16), EntryLayer("ok", None, base), 1.0) is None  # another size


def beside_fills(shift: float = 0.0, fill: float = -1e9, dtype=np.float64):
    """Rows of 32 logits, every other one a fill (a mask's -1e9): the fills dominate the largest
    magnitude."""
    x = np.random.default_rng(0).standard_normal((64, 32)) + shift
    x[:, 1::2] = fill
    return fingerprint(x.astype(dtype))


@pytest.mark.parametrize("fill", [-1e9, -1e4])
def test_values_beside_fills_that_moved_fail_recorded_and_distribution(fill):
    """1e-3 added to the values a mask keeps moves their order statistics by ~1e-3 of their magnitude,
    1e-12 of the fills': the rules compare each statistic to its own magnitude or the typical one."""
    base, moved = beside_fills(fill=fill), beside_fills(1e-3, fill)
    assert recorded_row(LAYER, "p", moved, EntryLayer("ok", None, base), 1e-6) is None
    row = distribution_row(LAYER, "p", moved, base, 1e-4)
    assert row.failed and row.value > 1e-4, row.message


def test_values_beside_fills_rounded_to_float32_stay_within_the_floor():
    """The twin: the same values rounded to float32 pass ``recorded`` at the default floor."""
    rounded = beside_fills(dtype=np.float32)
    row = recorded_row(LAYER, "p", rounded, EntryLayer("ok", None, beside_fills()), 1e-6)
    assert row is not None and not row.failed and row.value < 1e-6


def test_without_fills_the_rules_stay_relative_to_the_largest_magnitude():
    """A set without fills keeps its distance: the largest difference over the largest magnitude."""
    ref, moved = values(17), values(17, 1e-3)
    assert distribution_row(LAYER, "p", moved, ref, 1.0).value == pytest.approx(1e-3 / 8.0, rel=1e-9)


# in the verdict ----------------------------------------------------------------------------------

def _dependent_run():
    r = run()
    r.layers[-1].data_dependent = DataDependence.OP
    return r


def test_a_data_dependent_layer_of_another_size_is_judged_by_its_rule_and_says_how_it_is_known():
    prun = runtime()
    prun.layers["(model)"].fp = fp(shape=(3, 4))
    rows = {r.layer: r for r in runtime_rows(_dependent_run(), prun, entry(), spec(), dependent=recognize(_dependent_run()))}
    assert (rows["(model)"].check, rows["(model)"].data_dependent) == ("distribution", "op")
    # the same size change on a layer not known to depend on values is a shape failure
    plain = {r.layer: r for r in runtime_rows(run(), prun, entry(), spec())}
    assert (plain["(model)"].check, plain["(model)"].status) == ("shape", "fail")


def test_a_passing_usual_row_stays_and_only_gains_the_mark():
    r = _dependent_run()
    rows = {x.layer: x for x in runtime_rows(r, runtime(), entry(), spec(), dependent=recognize(r))}
    assert (rows["(model)"].check, rows["(model)"].status, rows["(model)"].data_dependent) == ("error-growth", "pass", "op")
    assert rows["a"].data_dependent is None


def test_matched_detections_decide_and_allclose_does_not_gate_them():
    r = _dependent_run()
    prun = runtime()
    pl = prun.layers["(model)"]
    pl.fp, pl.detections = fp(shape=(3, 4)), replace(facts(), boxes="(model)")
    pl.exact = {"allclose": False, "expected": 1.0, "actual": 2.0, "max_abs": 1.0, "max_rel": 1.0, "mismatched": 8,
                "count": 8, "worst_index": [0, 0], "rtol": 0.0, "atol": 0.0}
    s = replace(spec(), output_tolerance=(0.0, 0.0))
    row = {x.layer: x for x in runtime_rows(r, prun, entry(), s, dependent=recognize(r))}["(model)"]
    assert (row.check, row.status) == ("detections", "pass") and row.exact == {**pl.exact, "gated": False}


def test_recognised_from_the_runs_only_by_a_pytorch_provider_and_only_the_leading_size():
    r = run()
    torch_cpu = runtime("torch-cpu")
    torch_cpu.layers["b"].fp = fp(shape=(5, 4))  # another number of items
    torch_cpu.layers["c"].fp = fp(shape=(2, 5))  # another item shape: no data-dependent size
    ort = runtime()
    ort.layers["a"].fp = fp(shape=(5, 4))  # an ONNX graph may differ by a fault of its own
    r.providers = [torch_cpu, ort, ProviderRun.skipped(Target("torch-cuda", "gpu"), "no GPU")]
    assert recognize(r) == {"b": DataDependence.RUNS}


def test_the_baseline_record_is_kept_when_the_run_does_not_show_it():
    b = baseline()
    b = replace(b, layers=tuple(replace(x, data_dependent=DataDependence.RUNS) if x.name == "c" else x
                                for x in b.layers))
    assert recognize(run(), b) == {"c": DataDependence.RUNS}


def test_the_reference_judges_data_dependent_layers_exactly():
    r = _dependent_run()
    r.layers[-1].fp = fp(shape=(3, 4))
    mv = model_verdict(spec(Tolerance()), r, baseline(), "b.msgpack.zst", "cmd")
    ref = {x.layer: x for x in mv.providers[0].rows}
    assert (ref["(model)"].check, ref["(model)"].status, ref["(model)"].data_dependent) == ("shape", "fail", "op")


def test_rows_carry_their_mark_through_the_report_json():
    row = Row("(model)[0][boxes]", "SSD", "pass", "detections", 0.0, 0.0, message="m",
              data_dependent=DataDependence.OP)
    doc = row.to_dict()
    assert doc["data_dependent"] == "op" and Row.from_dict(Obj(doc, "report", "row")) == row
    assert "data_dependent" not in Row("a", "Linear", "pass").to_dict()


def test_a_value_that_is_no_error_is_kept_out_of_errors():
    assert Row("a", "", "fail", "detections", 3.0).error is None
    assert Row("a", "", "fail", "ceiling", 3.0).error == 3.0
    assert math.isnan(Row("a", "", "pass", "error-growth", math.nan).error)


def test_a_data_dependent_output_that_fails_its_rule_is_named_by_the_rule_in_the_hint_not_as_inf():
    """A runtime fault at `b` carried to an output of another size that fails `distribution`: the hint says
    the output fails that rule (its row measures no error against the reference), never "it is inf"."""
    r = _dependent_run()
    prun = runtime(errs={"b": 1.0})
    prun.layers["(model)"].fp = replace(fp(shape=(3, 4)), quantiles=tuple(q + 0.5 for q in fp().quantiles))
    r.providers.append(prun)
    mv = model_verdict(spec(Tolerance()), r, baseline(entry()), "b.msgpack.zst", "cmd")
    (hint,) = [h for h in mv.hints if h.kind == "introduced-vs-inherited"]
    assert "at the output ((model)) it fails `distribution`" in hint.message and "inf" not in hint.message


def test_an_output_with_an_error_against_the_reference_is_given_by_its_value_in_the_hint():
    """The twin: an output whose shape does not depend on values carries its error, and the hint gives it."""
    r = run()
    r.providers.append(runtime(errs={"b": 1.0, "(model)": 0.5}))
    mv = model_verdict(spec(Tolerance()), r, baseline(entry()), "b.msgpack.zst", "cmd")
    (hint,) = [h for h in mv.hints if h.kind == "introduced-vs-inherited"]
    assert hint.message.endswith("at the output ((model)) it is 0.5")

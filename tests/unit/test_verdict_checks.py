"""gate.verdict.checks, driven directly: each check at its limit (passes) and just past it (fails).

Runs and baselines are built by hand (tests/support/verdicts.py): every value a check compares
is one the test chose, so these hold on every machine.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from gate.config import Tolerance
from gate.fingerprint import relative_error
from gate.verdict.checks import layout, reference_rows, runtime_rows
from gate.verdict.judge import model_verdict
from tests.support.verdicts import NAMES, baseline, entry, fp, run, runtime, spec

JUST_PAST = 1 + 1e-9


def rows_by_layer(rows):
    return {r.layer: r for r in rows}


def drift(move: float) -> float:
    """The drift the reference check measures for a layer moved by ``move``."""
    return relative_error(fp(move), fp())


# reference-drift ---------------------------------------------------------------------------

@pytest.mark.parametrize("past", [False, True])
def test_reference_drift_at_its_limit_passes_and_past_it_fails(past):
    change = drift(3e-9)
    limit = change / JUST_PAST if past else change
    # the output moves too: a change that leaves every output as it was is a refactor inside the model
    rows = rows_by_layer(reference_rows(run(moves={"b": 3e-9, "(model)": 3e-9}), baseline(), spec(Tolerance(reference=limit))))
    assert rows["a"].status == "pass" and rows["a"].value == 0.0
    assert rows["b"].check == "reference-drift" and rows["b"].value == change and rows["b"].threshold == limit
    assert rows["b"].failed is past
    assert rows["b"].status == ("fail" if past else "pass")
    if past:
        assert "the model's code or weights changed" in rows["b"].message


def test_reference_drift_limit_of_a_float32_reference_is_float32_rounding():
    """A float32 reference (the model cannot run in float64) is held to 1e-5, not float64's 1e-9."""
    r = run(moves={"b": 9e-6})
    r.reference_dtype = "float32"
    row = rows_by_layer(reference_rows(r, baseline(), spec()))["b"]
    assert row.threshold == 1e-5 and row.status == "pass"
    row = rows_by_layer(reference_rows(run(moves={"b": 9e-6, "(model)": 9e-6}), baseline(), spec()))["b"]
    assert row.threshold == 1e-9 and row.status == "fail"


def test_reference_limit_follows_layer_tolerance_globs_later_rules_winning():
    s = spec(layers={"b*": {"reference": 1e-3}, "b": {"reference": 1e-6}})
    rows = rows_by_layer(reference_rows(run(moves={"b": 1e-5, "(model)": 1e-5}), baseline(), s))
    assert rows["b"].threshold == 1e-6 and rows["b"].status == "fail"


@pytest.mark.parametrize("past", [False, True])
def test_calibrated_noise_widens_the_reference_limit_to_four_times_it(past):
    change = drift(1e-7)
    noise = change / 4 * (1 / JUST_PAST if past else 1)
    rows = rows_by_layer(reference_rows(run(moves={"b": 1e-7, "(model)": 1e-7}), baseline(noise={"b": noise}), spec()))
    assert rows["b"].threshold == 4 * noise
    assert rows["b"].failed is past


@pytest.mark.parametrize("integer", [False, True])
def test_an_integer_layers_reference_may_not_move_at_all_where_a_float_layer_keeps_its_limit(integer):
    """Ids, hashes and masks carry no rounding: a change far under every float limit (a loosened
    tolerance, calibrated noise) is a change of the model; unchanged, they pass."""
    r = run(moves={"b": 1e-14, "(model)": 1e-14})
    r.layers[1].integer = r.layers[2].integer = integer
    s = spec(Tolerance(reference=1e-3))
    rows = rows_by_layer(reference_rows(r, baseline(noise={"b": 1e-6}), s))
    assert (rows["b"].status, rows["b"].threshold) == (("fail", 0.0) if integer else ("pass", 1e-3))
    if integer:
        assert "(relative L2; integers, which no rounding moves)" in rows["b"].message
    assert (rows["c"].status, rows["c"].value) == ("pass", 0.0)  # unchanged


# nonfinite, shape, degenerate, structure -------------------------------------------------

def test_nan_in_the_reference_that_the_baseline_lacks_always_fails():
    rows = rows_by_layer(reference_rows(run(b=fp(nan=1)), baseline(), spec(Tolerance(reference=1.0))))
    assert (rows["b"].status, rows["b"].check) == ("fail", "nonfinite")
    assert "1 NaN" in rows["b"].message and rows["b"].value == 1 and rows["b"].baseline == 0


def test_nan_in_both_reference_and_baseline_is_compared_not_failed():
    rows = rows_by_layer(reference_rows(run(b=fp(nan=1)), baseline(b=fp(nan=1)), spec()))
    assert rows["b"].status == "pass"


def test_runtime_nan_the_reference_lacks_fails_whatever_its_error():
    prun = runtime(errs={"b": 0.0})
    prun.layers["b"].fp = fp(nan=2)
    rows = rows_by_layer(runtime_rows(run(), prun, entry(), spec(Tolerance(ceiling=math.inf, floor=1.0))))
    assert (rows["b"].status, rows["b"].check, rows["b"].value) == ("fail", "nonfinite", 2)


def test_a_reference_difference_that_cannot_be_computed_fails_naming_it():
    """A sum of squares that overflowed float64 would divide any distance down to 0: never a pass."""
    huge = dataclasses.replace(fp(), sumsq=math.inf)
    rows = rows_by_layer(reference_rows(run(b=huge), baseline(b=huge), spec(Tolerance(reference=1.0))))
    assert (rows["b"].status, rows["b"].check) == ("fail", "reference-drift") and math.isnan(rows["b"].value)
    assert "distance to its baseline cannot be computed" in rows["b"].message
    assert rows["a"].status == "pass"


@pytest.mark.parametrize("base", [1e-7, math.nan])
def test_a_runtime_error_that_cannot_be_computed_fails_naming_it(base):
    """NaN compares false with every limit: it fails, with or without a baseline value to grow from."""
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"b": math.nan}), entry(errs={"b": base}),
                                      spec(Tolerance(ceiling=math.inf))))
    assert (rows["b"].status, rows["b"].check) == ("fail", "error-growth") and math.isnan(rows["b"].value)
    assert "CPUExecutionProvider's error against the reference cannot be computed" in rows["b"].message
    assert rows["a"].status == "pass"


def test_reference_shape_change_fails():
    rows = rows_by_layer(reference_rows(run(b=fp(shape=(4, 2)), output=fp(1e-3)), baseline(), spec()))
    assert (rows["b"].status, rows["b"].check) == ("fail", "shape")
    assert "[4, 2]" in rows["b"].message and "[2, 4]" in rows["b"].message


def test_runtime_shape_other_than_the_reference_fails():
    prun = runtime()
    prun.layers["c"].fp = fp(shape=(8,))
    rows = rows_by_layer(runtime_rows(run(), prun, entry(), spec()))
    assert (rows["c"].status, rows["c"].check) == ("fail", "shape")


@pytest.mark.parametrize("dead, words", [(dict(zero=8), "every element is zero"),
                                         (dict(nan=8), "every element is NaN/Inf")])
def test_degenerate_output_never_passes_even_when_the_baseline_agrees(dead, words):
    rows = rows_by_layer(reference_rows(run(output=fp(**dead)), baseline(output=fp(**dead)), spec()))
    assert (rows["(model)"].status, rows["(model)"].check) == ("fail", "degenerate")
    assert words in rows["(model)"].message
    # an inner layer that is all zeros is no output: not degenerate
    rows = rows_by_layer(reference_rows(run(a=fp(zero=8)), baseline(a=fp(zero=8)), spec()))
    assert rows["a"].status == "pass"


@pytest.mark.parametrize("logits_zero", [False, True])
def test_an_all_zero_output_beside_one_that_is_not_is_a_value(logits_zero):
    """`(logits, logits.argmax(-1))` where every prediction is class 0, or a mask all False: a value the
    model gives, not a dead model. Its twin: every output all zero still never passes."""
    names = ("a", "b", "c", "(model)[0]", "(model)[1]")
    outs = {"output[0]": fp(zero=8) if logits_zero else fp(0.5, axis=6), "output[1]": fp(zero=8)}
    rows = rows_by_layer(reference_rows(run(names=names, **outs), baseline(names=names, **outs), spec()))
    assert (rows["(model)[1]"].status, rows["(model)[1]"].check) == \
        (("fail", "degenerate") if logits_zero else ("pass", "reference-drift"))
    assert ("every element of every output is zero" in (rows["(model)[1]"].message or "")) is logits_zero


def test_a_new_layer_with_a_vanished_layers_fingerprint_is_that_layer_renamed():
    r = run(names=("a", "x", "c", "(model)"))  # b renamed x, same numbers
    rows = rows_by_layer(reference_rows(r, baseline(), spec()))
    assert (rows["x"].status, rows["x"].check, rows["x"].message) == ("pass", "reference-drift", "renamed from b")
    assert "b" not in rows  # compared as x, not reported missing
    # the runtime is judged by what its entry recorded for b
    rt = rows_by_layer(runtime_rows(r, runtime(names=("a", "x", "c", "(model)"), errs={"x": 0.5}),
                                    entry(errs={"b": 1e-7}), spec(), layout(r, baseline(), spec())))
    assert (rt["x"].status, rt["x"].baseline) == ("fail", 1e-7)


def test_a_name_that_now_belongs_to_another_module_is_matched_by_its_numbers():
    """A Dropout deleted from a Sequential shifts the indices after it: `c`'s module now runs as `b`."""
    b, c = fp(0.5, axis=2), fp(0.7, axis=3)
    r = run(names=("a", "b", "(model)"), b=c)
    ran, gone = reference_rows(r, baseline(b=b, c=c), spec())[1:3], reference_rows(r, baseline(b=b, c=c), spec())[-1]
    assert (ran[0].layer, ran[0].status, ran[0].message) == ("b", "pass", "renamed from c")
    assert (gone.layer, gone.status, gone.failed) == ("b", "missing", False)  # the baseline's b (the Dropout)
    assert "the name now belongs to another module" in gone.message
    st = layout(r, baseline(b=b, c=c), spec())
    assert st.renames == {"b": "c"} and st.gone == ("b",)


def test_a_module_that_became_a_no_op_fails_where_it_stopped_computing():
    """`b` now returns its input (a's values), and what follows moves: a is still compared under its own
    name, so b is no rename, and nothing after it holds."""
    a, b = fp(0.5, axis=2), fp(0.7, axis=3)
    rows = rows_by_layer(reference_rows(run(a=a, b=a, c=fp(0.2, axis=4), output=fp(0.2, axis=5)),
                                        baseline(a=a, b=b), spec()))
    assert (rows["a"].status, rows["b"].status, rows["b"].check) == ("pass", "fail", "reference-drift")


def test_a_new_layer_holding_a_present_layers_values_is_compared_as_that_layer():
    """A module wrapped in a Sequential: the wrapper's output is its child's."""
    a = fp(0.5, axis=2)
    r = run(names=("a", "w", "b", "c", "(model)"), a=a, w=a)
    rows = rows_by_layer(reference_rows(r, baseline(a=a), spec()))
    assert (rows["w"].status, rows["w"].message) == ("pass", "same values as a")
    mv = model_verdict(spec(), r, baseline(a=a), "b.msgpack.zst", "cmd")
    assert mv.status == "pass" and "1 layer holds the values of another baseline layer (w = a)" in mv.audits[0].message
    moved = run(names=("a", "w", "b", "c", "(model)"), a=a, w=fp(0.5 + 1e-3, axis=2))
    rows = rows_by_layer(reference_rows(moved, baseline(a=a), spec()))
    assert (rows["w"].status, rows["w"].check) == ("new", "structure")  # nothing holds its values: not compared


def test_new_and_gone_layers_are_reported_not_failed_unless_they_are_outputs():
    r = run(names=("a", "x", "(model)"), x=fp(0.9, axis=3))  # no vanished layer has x's numbers
    rows = rows_by_layer(reference_rows(r, baseline(), spec()))
    assert (rows["x"].status, rows["x"].check, rows["x"].failed) == ("new", "structure", False)
    assert (rows["b"].status, rows["c"].status) == ("missing", "missing")
    assert not rows["b"].failed and rows["b"].value is None
    # gone rows come after the run's own layers, in the baseline's order
    assert [row.layer for row in reference_rows(r, baseline(), spec())] == ["a", "x", "(model)", "b", "c"]
    mv = model_verdict(spec(), r, baseline(), "b.msgpack.zst", "cmd")
    assert mv.status == "pass" and [a.check for a in mv.audits] == ["structure"]
    assert mv.audits[0].message.endswith(
        "1 new layer (x) and 2 gone (b, c) since the baseline are not compared; every layer that remains "
        "is. `update-baseline` records the new ones")
    # gone layers only: no command brings their coverage back; re-recording drops them
    gone = model_verdict(spec(), run(names=("a", "b", "(model)")), baseline(), "b.msgpack.zst", "cmd")
    assert gone.audits[0].message.endswith(
        "1 layer gone since the baseline (c) is not compared; every layer that remains is. "
        "`update-baseline` drops the gone ones")
    # what ships is never a refactor: an output that is new or gone fails
    r = run(names=("a", "b", "c", "(model)[logits]"), **{"output[logits]": fp(0.9, axis=3)})
    rows = rows_by_layer(reference_rows(r, baseline(), spec()))
    assert (rows["(model)[logits]"].status, rows["(model)[logits]"].check) == ("fail", "structure")
    assert (rows["(model)"].status, rows["(model)"].check) == ("fail", "structure")
    # an output renamed with the same numbers (a dict key) is that output
    r = run(names=("a", "b", "c", "(model)[logits]"))
    rows = rows_by_layer(reference_rows(r, baseline(), spec()))
    assert (rows["(model)[logits]"].status, rows["(model)[logits]"].message) == ("pass", "renamed from (model)")


def test_outputs_swapped_are_what_ships_changed_not_a_rename():
    """`return logits, aux` became `return aux, logits`: each output now holds the other's values. Both
    names are still returned, so neither is a rename: each fails where it moved."""
    names = ("a", "b", "(model)[0]", "(model)[1]")
    swapped = {"output[0]": fp(0.9, axis=7), "output[1]": fp(0.5, axis=6)}
    r = run(names=names, **swapped)
    b = baseline(names=names, **{"output[0]": fp(0.5, axis=6), "output[1]": fp(0.9, axis=7)})
    mv = model_verdict(spec(), r, b, "b.msgpack.zst", "cmd")
    assert mv.status == "regressed" and mv.first_regression.layer == "(model)[0]"
    assert not [a for a in mv.audits if "renamed" in a.message]


def test_a_layer_that_moved_after_a_vanished_one_names_it():
    r = run(names=("a", "c", "(model)"), moves={"c": 1e-3, "(model)": 1e-3})
    mv = model_verdict(spec(), r, baseline(), "b.msgpack.zst", "cmd")
    assert mv.status == "regressed" and mv.first_regression.layer == "c"
    assert mv.first_regression.message.endswith("; 1 layer before it in the baseline is gone: b")


# error-growth and ceiling ----------------------------------------------------------------

@pytest.mark.parametrize("past", [False, True])
def test_error_growth_at_growth_times_baseline_plus_floor_passes_and_past_fails(past):
    base = 3e-7
    limit = 2.0 * base + 1e-6
    err = limit * JUST_PAST if past else limit
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"b": err}), entry(errs={"b": base}), spec()))
    assert (rows["b"].check, rows["b"].threshold, rows["b"].baseline) == ("error-growth", limit, base)
    assert rows["b"].failed is past
    assert rows["a"].status == "pass"


def test_error_growth_uses_the_configured_growth_and_floor():
    s = spec(Tolerance(growth=1.5, floor=1e-8))
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"b": 4e-7}), entry(errs={"b": 2e-7}), s))
    assert rows["b"].threshold == 1.5 * 2e-7 + 1e-8 and rows["b"].status == "fail"


@pytest.mark.parametrize("past", [False, True])
def test_calibrated_noise_raises_the_growth_limit_to_baseline_plus_four_times_it(past):
    base, noise = 1e-7, 1e-6
    limit = base + 4 * noise  # above 2 * base + floor (1.2e-6)
    err = limit * JUST_PAST if past else limit
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"b": err}), entry(errs={"b": base}, noise={"b": noise}),
                                      spec()))
    assert rows["b"].threshold == limit and rows["b"].failed is past


@pytest.mark.parametrize("past", [False, True])
def test_ceiling_at_its_limit_passes_and_past_fails_even_within_growth(past):
    ceiling = 1e-2
    err = ceiling * JUST_PAST if past else ceiling
    # a baseline error this large would let growth pass it: the ceiling does not
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"c": err}), entry(errs={"c": 0.5}), spec()))
    assert rows["c"].check == ("ceiling" if past else "error-growth")
    assert rows["c"].failed is past
    if past:
        assert rows["c"].threshold == ceiling


def test_an_error_that_grew_past_its_budget_fails_growth_first_even_over_the_ceiling():
    """So a ceiling row with a baseline value is an error within its budget: a limit, not a change."""
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"c": 0.5}), entry(errs={"c": 1e-7}), spec()))
    assert (rows["c"].check, rows["c"].status, rows["c"].baseline) == ("error-growth", "fail", 1e-7)
    held = rows_by_layer(runtime_rows(run(), runtime(errs={"c": 3e-2}), entry(errs={"c": 2e-2}), spec()))
    assert (held["c"].check, held["c"].baseline) == ("ceiling", 2e-2)
    assert "the ceiling is under what this runtime gives" in held["c"].message


def test_ceiling_applies_without_any_baseline():
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"c": 0.02}), None, spec()))
    assert (rows["c"].check, rows["c"].status) == ("ceiling", "fail")
    assert rows["a"].status == "pass" and rows["a"].threshold is None  # nothing else to grow from


@pytest.mark.parametrize("past", [False, True])
def test_layer_without_a_baseline_value_is_held_to_the_floor(past):
    """Folded in the baseline, observable now (a graph change un-fused it): the floor is the limit."""
    e = entry()
    e.layers["b"] = type(e.layers["b"])("folded")
    err = 1e-6 * JUST_PAST if past else 1e-6
    own = dataclasses.replace(fp(), sumsq=2.0)  # values of its own: no earlier layer holds them
    rows = rows_by_layer(runtime_rows(run(b=own), runtime(errs={"b": err}), e, spec()))
    assert rows["b"].threshold == 1e-6 and rows["b"].baseline is None
    assert rows["b"].status == ("fail" if past else "new") and rows["b"].failed is past


@pytest.mark.parametrize("past", [False, True])
def test_a_layer_folded_then_holding_an_earlier_layers_values_is_judged_by_that_layers_error(past):
    """An Identity folded in the baseline's graph that runs alone now (attention rewritten with SDPA) holds
    `a`'s values (in another layout: the sketch differs): its error grows from `a`'s, never from nothing."""
    e = entry(errs={"a": 1e-3})
    e.layers["b"] = type(e.layers["b"])("folded")
    limit = 2 * 1e-3 + 1e-6
    errs = {"a": 1e-3, "b": limit * (JUST_PAST if past else 1)}
    rows = rows_by_layer(runtime_rows(run(b=fp(0.5)), runtime(errs=errs), e, spec()))
    assert (rows["b"].threshold, rows["b"].baseline) == (limit, 1e-3)
    assert rows["b"].failed is past


def test_nan_baseline_error_is_no_baseline_value():
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"b": 5e-7}), entry(errs={"b": math.nan}), spec()))
    assert rows["b"].status == "new" and rows["b"].threshold == 1e-6


def test_half_precision_runtimes_get_their_own_default_budget():
    prun = runtime(errs={"b": 5e-4}, precision="float16")
    rows = rows_by_layer(runtime_rows(run(), prun, entry(errs={"b": 1e-4}, precision="float16"), spec()))
    assert rows["b"].threshold == 2 * 1e-4 + 1e-3 and rows["b"].status == "pass"
    rows = rows_by_layer(runtime_rows(run(), runtime(errs={"b": 5e-4}), entry(errs={"b": 1e-4}), spec()))
    assert rows["b"].status == "fail"


def test_folded_and_absent_layers_are_reported_not_checked():
    prun = runtime()
    prun.layers["a"] = type(prun.layers["a"])("folded", reason="fused into b")
    del prun.layers["c"]
    v = model_verdict(spec(), _with(prun), baseline(entry()), "b.msgpack.zst", "cmd")
    rows = rows_by_layer(v.providers[1].rows)
    assert (rows["a"].status, rows["a"].message) == ("folded", "fused into b")
    assert rows["c"].status == "absent" and not rows["c"].failed
    assert (v.providers[1].checked, v.providers[1].folded) == (len(NAMES) - 2, 1)


def test_a_model_output_the_shipped_graph_does_not_return_fails_naming_it():
    prun = runtime()
    prun.layers["(model)"] = type(prun.layers["a"])("absent", reason="value not returned")
    prun.layers["c"] = type(prun.layers["a"])("absent", reason="no ONNX node")  # inside the model: reported
    v = model_verdict(spec(), _with(prun), baseline(entry()), "b.msgpack.zst", "cmd")
    rows = rows_by_layer(v.providers[1].rows)
    assert rows["(model)"].failed and rows["(model)"].check == "structure"
    said = rows["(model)"].message
    assert said.startswith("the shipped graph does not return `(model)` (value not returned)")
    assert rows["c"].status == "absent" and not rows["c"].failed


def _with(*pruns):
    r = run()
    r.providers = list(pruns)
    return r


# one cause, one mark -----------------------------------------------------------------------------------

def _model_changed_at_b(cpu_errs: dict, torch_errs: dict):
    """The reference moved at `b` (a model change); torch-cpu float32 and CPUExecutionProvider report these
    errors against today's reference, their baselines 1e-7 everywhere."""
    r = run(moves={"b": 1e-3, "c": 1e-3, "(model)": 1e-3})
    r.providers = [runtime("torch-cpu", errs=torch_errs), runtime(errs=cpu_errs)]
    b = baseline(entry("torch-cpu"), entry())
    return model_verdict(spec(), r, b, "baselines/m.msgpack.zst", "cmd")


def test_runtime_errors_that_follow_a_model_change_are_not_a_second_mark():
    """The new model's float32 errors are 1e-6 on both runtimes after `b`, past 2x the baseline's 1e-7 +
    1e-6: they follow the change (today's torch-cpu float32 has them too)."""
    mv = _model_changed_at_b({"c": 4e-6, "(model)": 4e-6}, {"c": 3e-6, "(model)": 3e-6})
    assert (mv.first_regression.layer, mv.first_regression.provider) == ("b", "torch-cpu")
    runtimes = [p for p in mv.providers if p.role == "runtime"]
    assert all(p.status == "pass" and p.first_regression is None for p in runtimes)
    rows = {r.layer: r for r in runtimes[1].rows}
    assert rows["c"].status == "follows" and "follows the model change at `b`" in rows["c"].message
    assert not [h for h in mv.hints if h.kind == "runtime-change"]


@pytest.mark.parametrize("where, err", [("a", 1e-3), ("c", 1e-3), ("c", math.nan)])
def test_a_runtime_that_also_regressed_beyond_the_change_is_a_second_finding(where, err):
    """Past today's torch-cpu float32 error at a layer after the change (or an error that cannot be
    computed: no change explains it), or at a layer before it (where no change explains anything), the
    runtime regressed on its own."""
    mv = _model_changed_at_b({where: err}, {"c": 3e-6})
    assert mv.first_regression.layer == ("a" if where == "a" else "b")
    cpu = next(p for p in mv.providers if p.name == "CPUExecutionProvider")
    assert cpu.status == "regressed" and cpu.first_regression.layer == where
    assert {r.layer: r for r in cpu.rows}[where].status == "fail"


def test_a_model_change_into_a_lower_precision_is_named_in_its_hint():
    """A factory that now returns ``model.half()``: the reference moves as a model change (torch-cpu runs that
    code), and the hint names the precision nobody configured. Twin: a graph as low as the baseline's says
    nothing of it."""
    changed = run(moves={"b": 0.5})
    before = baseline()
    changed.meta.lowered = ["float16 weight `b.weight`", "cast to float16 (node `c`)"]
    before.meta.lowered = []
    hint = next(h for h in model_verdict(spec(), changed, before, "b.msgpack.zst", "cmd").hints
                if h.kind == "model-change")
    assert hint.message.endswith("its graph now computes below float32 where the baseline's did not (2 new, "
                                 "first: float16 weight `b.weight`)")
    before.meta.lowered = list(changed.meta.lowered)
    same = next(h for h in model_verdict(spec(), changed, before, "b.msgpack.zst", "cmd").hints
                if h.kind == "model-change")
    assert "below float32" not in same.message


def test_of_a_container_and_its_last_layer_a_new_name_is_the_layer_of_its_own_type():
    """`mlp = Sequential(Linear, GELU, Linear)` rewritten as `fc1, act, fc2`: `fc2` holds the values of both
    `mlp` and `mlp.2`, and is the Linear. Twin: a layer of neither type is the container, as before."""
    from gate.formats.baseline import BaselineLayer
    from gate.verdict.structure import by_name

    pair = [BaselineLayer("mlp", "Sequential", fp()), BaselineLayer("mlp.2", "Linear", fp())]
    assert by_name("fc2", pair, "Linear").name == "mlp.2"
    assert by_name("fc2", pair, "Identity").name == "mlp" and by_name("fc2", pair).name == "mlp"


@pytest.mark.parametrize("moved", [True, False])
def test_an_output_now_the_first_of_a_tuple_is_that_output_even_where_a_change_before_it_moved_it(moved):
    """`return head` became `return head, h`: `(model)[0]` is `(model)`, compared as it, whose values moved
    with the fault at `b` or not; only `(model)[1]` is new, and the step names it beside the change."""
    from gate.render.next_steps import step_words

    names = ("a", "b", "c", "(model)[0]", "(model)[1]")
    moves = {"b": 1e-3, "c": 1e-3, "(model)[0]": 1e-3} if moved else {}
    r = run(names=names, moves=moves, **{"output[1]": fp(0.9, axis=3)})
    mv = model_verdict(spec(), r, baseline(), "b.msgpack.zst", "cmd")
    assert layout(r, baseline(), spec()).renames == {"(model)[0]": "(model)"}
    marks = [x.layer for x in mv.providers[0].rows if x.check == "structure"]
    assert marks == ["(model)[1]"]
    assert "1 layer renamed since the baseline ((model) → (model)[0])" in mv.audits[-1].message
    assert "a new model output `(model)[1]`" in step_words(mv)


def _two_causes(second: bool):
    """`a.weight` changed; `b`'s code too where ``second`` (its eps): everything after `a` moved."""
    r = run(moves={"a": 1e-3, "b": 0.5, "c": 0.5, "(model)": 0.5})
    b = baseline()
    b.meta.module_code = {m: "0" * 16 for m in "abc"}
    r.meta.module_code = {m: ("1" if m == "b" and second else "0") * 16 for m in "abc"}
    b.meta.tensor_digests = {"a.weight": "0" * 16, "b.weight": "0" * 16}
    r.meta.tensor_digests = {"a.weight": "1" * 16, "b.weight": "0" * 16}
    return model_verdict(spec(), r, b, "b.msgpack.zst", "cmd")


@pytest.mark.parametrize("second", [True, False])
def test_a_layer_that_moved_follows_the_nearest_cause_before_it_and_the_step_names_each(second):
    from gate.render.next_steps import step_words

    mv = _two_causes(second)
    rows = rows_by_layer(mv.providers[0].rows)
    assert rows["a"].status == "fail" and rows["b"].status == ("fail" if second else "follows")
    follows = "`b`" if second else "`a`"
    assert all(follows in rows[n].message and rows[n].status == "follows" for n in ("c", "(model)"))
    words = step_words(mv)
    assert ("then by a change of its own at `b`, whose code changed" in words) is second
    hint = next(h for h in mv.hints if h.kind == "model-change")
    assert ("at `b`, whose code changed" in hint.message) is second


def test_a_step_names_two_later_causes_then_how_many_more():
    """A change to every weight makes each layer a cause of its own: the sentence names two and counts the
    rest, so a step stays a line. Twin: two causes are both named."""
    from gate.verdict.causes import Cause, later

    found = tuple(Cause(f"l{i}", (f"l{i}.weight",)) for i in range(5))
    words = later(found)
    assert "`l0`" in words and "`l1`" in words and "`l2`" not in words
    assert words.endswith("and at 3 more layers")
    two = later(found[:2])
    assert two.endswith("at `l1`, whose tensor `l1.weight` changed") and "more" not in two


@pytest.mark.parametrize("c_code", [True, False])
def test_the_calls_and_outputs_of_one_changed_module_are_one_cause(c_code):
    """`b.weight` changed; `b` returns a tuple (`b[0]`, `b[1]`, as an LSTM's output and state) and is called
    again after `c` (`b#2`): one cause, marked once at `b[0]`; its other outputs and its second call move
    with it, even where `c` changed its own code between them (twin: `c` is then a cause of its own)."""
    from gate.render.next_steps import step_words

    names = ("a", "b[0]", "b[1]", "c", "b#2", "(model)")
    r = run(names=names, moves={n: 1e-3 for n in names[1:]})
    b = baseline(names=names)
    b.meta.module_code = {m: "0" * 16 for m in "abc"}
    r.meta.module_code = {m: ("1" if m == "c" and c_code else "0") * 16 for m in "abc"}
    b.meta.tensor_digests = {"a.weight": "0" * 16, "b.weight": "0" * 16, "c.weight": "0" * 16}
    r.meta.tensor_digests = {"a.weight": "0" * 16, "b.weight": "1" * 16, "c.weight": "0" * 16}
    mv = model_verdict(spec(), r, b, "b.msgpack.zst", "cmd")
    rows = rows_by_layer(mv.providers[0].rows)
    assert mv.first_regression.layer == "b[0]"
    assert [n for n in names if rows[n].status == "fail"] == (["b[0]", "c"] if c_code else ["b[0]"])
    for n in ("b[1]", "b#2"):
        assert rows[n].status == "follows" and "moves with the change at `b[0]`" in rows[n].message
    assert ("at `c`" in rows["(model)"].message) is c_code
    words = step_words(mv)
    assert "at `b[1]`" not in words and "at `b#2`" not in words
    assert ("then by a change of its own at `c`, whose code changed" in words) is c_code

"""Numbers decide across modules (gate.verdict.moves), equal numbers never cross wires (structure's
matching, the difference against an all-zero reference, gate.verdict.causality), and a value that
several modules were folded into names them all. Runs and baselines built by hand
(tests/support/verdicts.py): every value is one the test chose."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gate.cli.console import verdict_line
from gate.config import Tolerance
from gate.core.runs import ProviderLayer
from gate.core.status import LayerStatus
from gate.fingerprint import Difference, difference
from gate.formats.baseline import EntryLayer
from gate.render import render_markdown
from gate.verdict.checks import layout, reference_rows
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.next_step import next_step
from tests.support.verdicts import baseline, entry, fp, run, runtime, spec

BLOCK = ("blk.conv", "blk.bn", "blk", "head", "(model)")
C, B, R, H, OUT = (fp(0.5, axis=k) for k in (2, 3, 4, 5, 6))  # conv, bn, block, head, output: five values
AS_BUILT = {"blk.conv": C, "blk.bn": B, "blk": R, "head": H, "output": OUT}


def judge(now: dict, base: dict | None = None, names=BLOCK, parts=None, tensors=None, code=None,
          first_use=None):
    r = run(names=names, **{**AS_BUILT, **now})
    r.first_use = first_use or {}
    b = baseline(names=names, **{**AS_BUILT, **(base or {})})
    if code is not None:  # module digests: the baseline's, and the run's with these modules' code changed
        coded(r, b, code)
    if parts is not None:  # content keys: the baseline's, and the run's with these parts changed
        b.meta.content_key = {"parts": {p: "0" for p in ("code", "source", "weights", "inputs")}}
        r.meta.content_key = {"parts": {**b.meta.content_key["parts"], **{p: "1" for p in parts}}}
    if tensors is not None:
        b.meta.tensor_digests, r.meta.tensor_digests = tensors
    return model_verdict(spec(), r, b, "baselines/m.msgpack.zst", "parity-gate update-baseline --model m"), r, b


def coded(r, b, changed=("blk",)):
    """Module digests on both sides, those of ``changed`` different in the run."""
    modules = {m for x in (*r.layers, *b.layers) for m in _modules(x.name)}
    b.meta.module_code = {m: "0" * 16 for m in modules}
    r.meta.module_code = {m: ("1" if m in changed else "0") * 16 for m in modules}


def _modules(layer: str) -> list[str]:
    parts = layer.split("#")[0].split("[")[0].split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts) + 1)]


def rows(mv):
    return {x.layer: x for x in mv.providers[0].rows}


def zeros(shape=(2, 4), scale: float = 0.0):
    """A layer whose values are all zero (``scale`` 0), or a few values of that size."""
    sketch = np.zeros(256)
    sketch[0] = scale
    n = math.prod(shape)
    return dataclasses.replace(fp(shape=shape), zero=n if not scale else n - 1, min=0.0, max=scale,
                               sum=scale, sumsq=scale * scale, sumabs=scale, sketch=sketch)


# a refactor inside a module ------------------------------------------------------------------

def test_a_layer_whose_values_moved_inside_a_module_whose_output_holds_is_a_refactor_that_passes():
    """A BatchNorm folded into the conv before it: the conv now gives the BatchNorm's values."""
    mv, _, _ = judge({"blk.conv": B}, code=("blk",))
    assert mv.status == "pass" and mv.first_regression is None
    row = rows(mv)["blk.conv"]
    assert (row.status, row.check, row.failed) == ("moved", "reference-drift", False)
    assert "moved inside `blk`, whose output holds" in row.message and "`blk.conv`'s output is now `blk.bn`'s" in row.message
    (note,) = [a.message for a in mv.audits if a.check == "structure"]
    assert note.startswith("1 layer moved as a refactor moves values: "
                           "`blk.conv`'s output is now `blk.bn`'s (inside `blk`)")
    step = next_step(mv)
    assert (step.kind, step.command, step.layer) == ("refactored", "parity-gate update-baseline --model m", "blk.conv")


def test_a_refactor_note_says_where_a_layers_former_values_went_when_no_baseline_layer_holds_its_new_ones():
    """A layer split in two: `blk.conv` lost its bias (values no baseline layer held); `blk.bias`, new, adds it."""
    names = ("blk.conv", "blk.bias", "blk.bn", "blk", "head", "(model)")
    r = run(names=names, **{**AS_BUILT, "blk.conv": fp(0.9, axis=7), "blk.bias": C})
    b = baseline(**AS_BUILT, names=BLOCK)
    coded(r, b)
    st = layout(r, b, spec())
    assert st.renames == {"blk.bias": "blk.conv"}
    assert st.moved["blk.conv"].words("blk.conv") == "`blk.conv`'s former output is now `blk.bias`'s"


def test_a_change_that_reaches_the_modules_output_fails_at_the_first_inner_layer_that_moved():
    moved = {n: fp(0.5 + 1e-3, axis=k) for n, k in (("blk.conv", 2), ("blk.bn", 3), ("blk", 4), ("head", 5), ("output", 6))}
    mv, _, _ = judge(moved)
    assert (mv.status, mv.first_regression.layer, mv.first_regression.check) == ("regressed", "blk.conv", "reference-drift")
    assert not any(x.status == "moved" for x in mv.providers[0].rows)


def test_a_module_that_stopped_computing_fails_where_it_stopped():
    """`blk.bn` replaced by an Identity, nothing absorbing it: it gives the conv's values, and what follows moves."""
    mv, _, _ = judge({"blk.bn": C, "blk": fp(0.6, axis=4), "head": fp(0.6, axis=5), "output": fp(0.6, axis=6)})
    assert (mv.first_regression.layer, mv.first_regression.check) == ("blk.bn", "reference-drift")


@pytest.mark.parametrize("dead", ["zeros", "constant"])
def test_an_output_that_identifies_nothing_holds_nothing_inside_it(dead):
    still = zeros() if dead == "zeros" else dataclasses.replace(R, min=0.5, max=0.5)
    mv, _, _ = judge({"blk.conv": B, "blk": still, "head": still, "output": still},
                     base={"blk": still, "head": still, "output": still})
    assert mv.first_regression.layer == "blk.conv"


@pytest.mark.parametrize("past", [False, True])
def test_where_weights_were_re_expressed_an_output_holds_within_their_float32_rounding(past):
    """Weights folded in float32 move the block's float64 output by their rounding: within 1e-6 that is a
    refactor where the code changed (tensors unrecorded: wherever it changed). Past it, the block fails,
    where its output moved: the conv's values went on to its BatchNorm's, the fold it is."""
    shift = 1e-6 * (1 + 1e-6 if past else 1 - 1e-6)
    rounding = {"blk": fp(0.5 + shift, axis=4), "head": fp(0.5 + shift, axis=5), "output": fp(0.5 + shift, axis=6)}
    folded, _, _ = judge({"blk.conv": B, **rounding}, parts=("source", "weights"))
    assert rows(folded)["blk.conv"].status == "moved"
    assert (folded.status, folded.first_regression and folded.first_regression.layer) == \
        (("regressed", "blk") if past else ("pass", None))


def test_where_only_the_weights_changed_an_output_holds_only_within_the_references_limit():
    rounding = {"blk": fp(0.5 + 5e-8, axis=4), "head": fp(0.5 + 5e-8, axis=5), "output": fp(0.5 + 5e-8, axis=6)}
    weights, _, _ = judge({"blk.conv": B, **rounding}, parts=("weights",))
    assert (weights.status, weights.first_regression.layer) == ("regressed", "blk.conv")
    tensors, _, _ = judge({"blk.conv": B, **rounding}, tensors=({"blk.bn.weight": "1"}, {"blk.bn.weight": "2"}))
    assert tensors.status == "regressed"  # the same names: no code change the digests can see
    gone, _, _ = judge({"blk.conv": B, **rounding}, tensors=({"blk.bn.weight": "1"}, {"blk.conv.bias": "2"}))
    assert gone.status == "pass"  # a BatchNorm's tensors gone, a bias new: the code changed
    same = ({"blk.conv.weight": "1"}, {"blk.conv.weight": "1"})
    code, _, _ = judge({"blk.conv": B, **rounding}, parts=("source",), tensors=same)
    assert code.status == "regressed"  # code alone moves float64 by ~1e-16: no rounding to excuse


# a change in a layer's own tensors is never a refactor by itself ---------------------------------

FOLDED = {"blk.conv": B}  # the conv now gives the BatchNorm's values, the block's output holds
DIGESTS = {"blk.conv.weight": "1", "blk.bn.weight": "2", "head.weight": "3"}


def test_values_move_only_inside_a_module_whose_own_code_changed():
    """The same numbers pass where the block's code changed, and fail where only another module's did
    or nothing did: a weight change that a layer scale or a gate hides from the block's output."""
    refactor, _, _ = judge({"blk.conv": fp(0.9, axis=7)}, code=("blk",))
    assert refactor.status == "pass"
    for elsewhere in ((), ("head",)):
        mv, _, _ = judge({"blk.conv": fp(0.9, axis=7)}, code=elsewhere)
        assert (mv.status, mv.first_regression.layer) == ("regressed", "blk.conv"), elsewhere
        assert not any(x.status == "moved" for x in mv.providers[0].rows)


def test_a_code_change_upstream_lets_values_move_only_after_it_ran():
    """The model's own forward changed: the model's outputs may hold a refactor; a module call that ran
    before any changed code did not move because of it."""
    names = ("stem", "blk.conv", "blk.bn", "blk", "head", "(model)")
    values = {**AS_BUILT, "stem": fp(0.5, axis=8)}
    r, b = run(names=names, **{**values, "blk.conv": fp(0.9, axis=7)}), baseline(names=names, **values)
    coded(r, b, ("head",))  # `head` runs after `blk.conv`
    mv = model_verdict(spec(), r, b, "p", "cmd")
    assert mv.first_regression.layer == "blk.conv"
    coded(r, b, ("stem",))  # `stem` runs before it, but outside `blk`: no module around the conv changed
    assert model_verdict(spec(), r, b, "p", "cmd").first_regression.layer == "blk.conv"


@pytest.mark.parametrize("beside", [(), ("head",), ("blk",)])
def test_a_layer_whose_own_tensors_changed_fails_where_the_rule_cannot_say_where_its_values_went(beside):
    """A weight fault alone, beside a refactor elsewhere, and inside a block whose code changed: the conv's
    weight changed and its new values are no baseline layer's, nor did any layer take its old ones."""
    faulted = {**DIGESTS, "blk.conv.weight": "9"}
    mv, _, _ = judge({"blk.conv": fp(0.9, axis=7)}, tensors=(DIGESTS, faulted), code=beside)
    assert (mv.status, mv.first_regression.layer, mv.first_regression.check) == \
        ("regressed", "blk.conv", "reference-drift")
    assert "`blk.conv.weight`" in rows(mv)["blk.conv"].message


def test_a_fold_that_changed_the_conv_weights_still_passes():
    """The conv's weights changed (the BatchNorm folded into them) and it now gives the BatchNorm's values."""
    mv, _, _ = judge(FOLDED, tensors=(DIGESTS, {**DIGESTS, "blk.conv.weight": "9"}), code=("blk",))
    assert mv.status == "pass" and rows(mv)["blk.conv"].status == "moved"


def _union(parts, scale=1.0):
    """A fingerprint of the elements of ``parts`` together (a merged projection), its values times
    ``scale``."""
    n = sum(p.count for p in parts)
    return dataclasses.replace(parts[0], shape=(n,), count=n, sum=scale * sum(p.sum for p in parts),
                               sumsq=scale * scale * sum(p.sumsq for p in parts),
                               sumabs=scale * sum(p.sumabs for p in parts),
                               min=scale * min(p.min for p in parts), max=scale * max(p.max for p in parts))


@pytest.mark.parametrize("scale, passes", [(1.0, True), (1 + 1e-3, False)])
def test_a_merge_passes_where_its_values_are_the_gone_layers_together_and_its_faulted_twin_fails(scale,
                                                                                                   passes):
    """`blk.q` now computes q, k and v (`blk.k`, `blk.v` gone): its count and moments are theirs together."""
    names = ("blk.q", "blk.k", "blk.v", "blk", "(model)")
    q, k, v, out = (fp(0.5, axis=a, shape=(2, 4)) for a in (2, 3, 4, 5))
    base = baseline(names=names, **{"blk.q": q, "blk.k": k, "blk.v": v, "blk": out, "output": out})
    merged = {"blk.q": _union([q, k, v], scale), "blk": out, "output": out}
    r = run(names=("blk.q", "blk", "(model)"), **merged)
    r.meta.tensor_digests = {"blk.q.weight": "9"}
    base.meta.tensor_digests = {"blk.q.weight": "1", "blk.k.weight": "2", "blk.v.weight": "3"}
    coded(r, base)
    mv = model_verdict(spec(), r, base, "p", "cmd")
    assert (mv.status == "pass") is passes, mv.first_regression
    if passes:
        said = "`blk.q` now computes `blk.q`, `blk.k` and `blk.v`'s values together"
        assert said in rows(mv)["blk.q"].message
    else:
        assert mv.first_regression.layer == "blk.q"


# equal numbers never cross wires -------------------------------------------------------------

def test_against_an_all_zero_reference_the_difference_is_absolute_and_zero_when_both_are():
    assert difference(zeros(), zeros()) == Difference(0.0, absolute=True)
    tiny = difference(zeros(scale=1e-30), zeros())
    assert tiny.absolute and tiny.value == pytest.approx(1e-30 / math.sqrt(8))
    assert difference(fp(1e-3), fp()) == Difference(pytest.approx(1e-3), absolute=False)


@pytest.mark.parametrize("past", [False, True])
def test_a_layer_whose_baseline_is_all_zeros_is_held_to_the_limit_read_as_an_rms(past):
    rms = difference(zeros(scale=3e-9), zeros()).value
    limit = rms / (1 + 1e-9) if past else rms
    now = run(b=zeros(scale=3e-9), output=fp(1e-3))  # what follows moves: no module around b holds
    row = {x.layer: x for x in reference_rows(now, baseline(b=zeros()), spec(Tolerance(reference=limit)))}["b"]
    assert (row.failed, row.absolute, row.threshold) == (past, True, limit)
    assert row.value == pytest.approx(3e-9 / math.sqrt(8))
    if past:
        assert "RMS of the difference: the baseline is all zeros" in row.message
        assert row.to_dict()["absolute"] is True


def test_a_runtime_that_computes_a_few_denormals_where_the_reference_is_zero_stays_within_its_limits():
    r = run(b=zeros())
    prun = runtime(errs={"b": difference(zeros(scale=1e-40), zeros()).value})
    r.providers = [prun]
    mv = model_verdict(spec(), r, baseline(entry(), b=zeros()), "p", "cmd")
    assert mv.status == "pass"
    row = {x.layer: x for x in mv.providers[1].rows}["b"]
    assert row.absolute and row.value < 1e-39


def test_all_zero_and_constant_layers_are_never_matched_by_their_numbers():
    """Two zero-initialized tables renamed and moved: their numbers are every such layer's, so neither is a
    rename. In their places (between the same compared layers, as many, of one type and shape) they are."""
    r = run(names=("a", "t1", "t2", "(model)"), t1=zeros(), t2=zeros())
    st = layout(r, baseline(names=("table_a", "a", "table_b", "(model)"), table_a=zeros(), table_b=zeros()), spec())
    assert st.renames == {} and st.new == ("t1", "t2") and st.gone == ("table_a", "table_b")
    st = layout(r, baseline(names=("a", "table_a", "table_b", "(model)"), table_a=zeros(), table_b=zeros()), spec())
    assert st.renames == {"t1": "table_a", "t2": "table_b"} and st.new == () and st.gone == ()


def test_of_candidates_sharing_a_value_the_name_decides_or_none_is_matched():
    v = fp(0.5, axis=2)
    branches = baseline(names=("left", "right", "(model)"), left=v, right=v)  # two layers, one value
    st = layout(run(names=("y", "x.left", "(model)"), y=v, **{"x.left": v}), branches, spec())
    assert st.renames == {"x.left": "left"} and st.new == ("y",)


def test_a_module_and_the_layers_inside_it_that_return_its_output_are_one_value():
    v = fp(0.5, axis=2)
    base = baseline(names=("blocks.1.relu", "blocks.1", "blocks", "(model)"), **{"blocks.1.relu": v, "blocks.1": v, "blocks": v})
    wrapped = run(names=("model.blocks.1.relu", "model.blocks.1", "model.blocks", "(model)"),
                  **{"model.blocks.1.relu": v, "model.blocks.1": v, "model.blocks": v})
    st = layout(wrapped, base, spec())
    assert st.renames == {"model.blocks.1.relu": "blocks.1.relu", "model.blocks.1": "blocks.1", "model.blocks": "blocks"}
    assert layout(run(names=("stage", "(model)"), stage=v), base, spec()).renames == {"stage": "blocks"}


def test_a_shared_module_called_by_two_blocks_keeps_each_call_on_its_own_numbers():
    """A zero-initialized position-bias module shared by two attention blocks (`rel`, `rel#2`): a fault in
    the second block's attention is named there, not at a bias call, and 0/0 is no infinity."""
    names = ("rel", "b1.attn", "b1", "rel#2", "b2.attn", "b2", "(model)")
    values = {"rel": zeros(), "b1.attn": fp(0.5, axis=2), "b1": fp(0.5, axis=3), "rel#2": zeros(),
              "b2.attn": fp(0.5, axis=4), "b2": fp(0.5, axis=5), "output": fp(0.5, axis=6)}
    faulted = {**values, "b2.attn": fp(0.501, axis=4), "b2": fp(0.501, axis=5), "output": fp(0.501, axis=6)}
    r = run(names=names, **faulted)
    prun = runtime("torch-cpu", names=names, errs={"rel": 0.0, "rel#2": 0.0})
    r.providers = [prun]
    mv = model_verdict(spec(), r, baseline(entry("torch-cpu", names=names), names=names, **values), "p", "cmd")
    assert (mv.first_regression.layer, mv.first_regression.provider) == ("b2.attn", "torch-cpu")
    ref = rows(mv)
    assert ref["rel"].value == 0.0 and ref["rel#2"].value == 0.0 and ref["rel#2"].status == "pass"


def test_a_reference_that_moved_before_the_only_changed_weight_is_used_is_a_contradiction_not_a_verdict():
    names = ("a", "b", "c", "(model)")
    moved = {n: fp(1e-3, axis=k) for n, k in (("a", 2), ("b", 3), ("c", 4), ("output", 5))}
    digests = ({"a.weight": "1", "b.weight": "2"}, {"a.weight": "1", "b.weight": "3"})
    mv, _, _ = judge(moved, base={n: fp(axis=k) for n, k in (("a", 2), ("b", 3), ("c", 4), ("output", 5))},
                     names=names, parts=("weights",), tensors=digests)
    assert (mv.first_regression.layer, mv.first_regression.check) == ("b", "reference-drift")
    (audit,) = [a for a in mv.audits if a.check == "contradiction"]
    assert (audit.status, audit.layer) == ("warn", "a")
    assert "moved at `a` before the change could reach it: the only change is 1 tensor (`b.weight`), first used in `b`" \
        in audit.message
    # where the code changed too, anything may move: no contradiction
    mv, _, _ = judge(moved, base={n: fp(axis=k) for n, k in (("a", 2), ("b", 3), ("c", 4), ("output", 5))},
                     names=names, parts=("weights", "source"), tensors=digests)
    assert mv.first_regression.layer == "a" and not [a for a in mv.audits if a.check == "contradiction"]
    # a tied weight: the probe saw `b.weight` read first inside `a` (an embedding tied to a head)
    mv, _, _ = judge(moved, base={n: fp(axis=k) for n, k in (("a", 2), ("b", 3), ("c", 4), ("output", 5))},
                     names=names, parts=("weights",), tensors=digests, first_use={"b.weight": "a"})
    assert mv.first_regression.layer == "a" and not [a for a in mv.audits if a.check == "contradiction"]


# folded layers named in localization ---------------------------------------------------------

def test_a_runtime_regression_at_a_value_a_layer_was_folded_into_names_both():
    r = run(names=BLOCK, **AS_BUILT)
    prun = runtime(names=BLOCK, errs={"blk.bn": 0.5, "blk": 0.5, "head": 0.5, "(model)": 0.5})
    prun.layers["blk.conv"] = ProviderLayer(LayerStatus.FOLDED, reason="fused with the BatchNorm after it")
    r.providers = [prun]
    recorded = entry(names=BLOCK)
    recorded.layers["blk.conv"] = EntryLayer("folded")
    mv = model_verdict(spec(), r, baseline(recorded, names=BLOCK, **AS_BUILT), "baselines/m.msgpack.zst", "cmd")
    fr = mv.first_regression
    assert (fr.layer, fr.provider, fr.fused) == ("blk.bn", "CPUExecutionProvider", ("blk.conv",))
    report = assemble([mv], {})
    assert report.to_dict()["first_regression"]["fused"] == ["blk.conv"]
    assert "blk.bn (with blk.conv, folded into it) on CPUExecutionProvider" in verdict_line(report)
    assert "layer `blk.bn` (with `blk.conv`, folded into it) on `CPUExecutionProvider`" in render_markdown(report)


def test_what_moves_after_a_failure_inside_the_same_call_fails_too():
    """A layer of `blk` failed (its own weights changed, its values are nobody's); the BatchNorm after it
    moved, holding no tensors, and `blk`'s output holds: the same cause (it follows it: one mark), never a
    refactor beside it."""
    tensors = ({"blk.conv.weight": "1", "x.weight": "1"}, {"blk.conv.weight": "2", "y.weight": "1"})
    mv, _, _ = judge({"blk.conv": fp(0.9, axis=7), "blk.bn": fp(0.8, axis=8)}, code=("blk",), tensors=tensors)
    assert (mv.status, mv.first_regression.layer) == ("regressed", "blk.conv")
    assert rows(mv)["blk.bn"].status == "follows" and "`blk.conv`" in rows(mv)["blk.bn"].message
    assert not [a for a in mv.audits if a.check == "structure" and "moved inside" in a.message]


@pytest.mark.parametrize("second, own", [(None, False), ("tensors", True), ("code", True)])
def test_a_layer_that_moved_after_the_first_regression_follows_it_unless_it_changed_itself(second, own):
    """`blk.conv`'s weights changed: `head` and the output move with it, one cause and one mark (`follows`).
    Twins: `head`'s own weights changed too, or its module's own code: a cause of its own, failed."""
    tensors = ({"blk.conv.weight": "1", "head.weight": "1"},
               {"blk.conv.weight": "2", "head.weight": "2" if second == "tensors" else "1"})
    moved = {"blk.conv": fp(0.9, axis=7), "blk.bn": fp(0.8, axis=8), "blk": fp(0.7, axis=9),
             "head": fp(0.6, axis=10), "output": fp(0.65, axis=11)}
    mv, _, _ = judge(moved, code=("head",) if second == "code" else (), tensors=tensors)
    assert (mv.status, mv.first_regression.layer) == ("regressed", "blk.conv")
    status = {name: r.status for name, r in rows(mv).items()}
    assert status["blk.conv"] == "fail"
    assert status["blk.bn"] == status["blk"] == status["(model)"] == "follows"
    assert status["head"] == ("fail" if own else "follows"), status
    assert mv.providers[0].failed == 1 + own and mv.providers[0].checked == 5


def test_a_folds_rounding_budget_is_float32s_largest_error_so_far_within_a_floor_and_a_cap():
    """The budget a fold's weights get at each layer: the largest error the baseline's float32 torch-cpu run
    recorded up to it (a pooled layer's own smaller error does not lower it), at least about one float32
    rounding, at most 1e-5 (float32 ruined by a cancellation is no budget); 1e-6 with no such run."""
    from gate.verdict import moves

    names = ("a", "b", "c", "d", "(model)")
    errs = {"a": 1e-8, "b": 4e-7, "c": 1e-8, "d": 3e-4, "(model)": 2e-7}
    budget = moves.rounding(baseline(entry("torch-cpu", errs, names=names), names=names))
    assert [budget(n) for n in names] == [moves.FOLD_FLOOR, 4e-7, 4e-7, moves.FOLD_CAP, moves.FOLD_CAP]
    other = moves.rounding(baseline(entry("CPUExecutionProvider", errs, names=names), names=names))
    assert other("b") == moves.FOLD_ROUNDING

"""The legs of a sharded run made one report (gate.verdict.merge): the report one job would have written,
and every merge that would hide or double a model refused in one line naming the model and the legs."""

from __future__ import annotations

import copy
import json

import pytest

from gate.config.shards import Shard
from gate.errors import GateError
from gate.verdict.judge import assemble
from gate.verdict.merge import Leg, merge
from gate.verdict.report_file import load_report, parse_report, write_report
from gate.verdict.shard import ShardRun
from tests.support.action_fixtures import REPORTS

ONE_JOB = load_report(REPORTS / "regressed.json")  # tiny-cnn regressed, then tiny-mlp, as configured
COVERED = ("tiny-cnn", "tiny-mlp")


def leg(name: str, index: int, models: tuple[str, ...], count: int = 2, covered: tuple[str, ...] = COVERED) -> Leg:
    report = assemble([m for m in copy.deepcopy(ONE_JOB).models if m.name in models], ONE_JOB.environment)
    report.shard = ShardRun(Shard(index, count), covered)
    return Leg(name, report)


def test_the_legs_merged_are_the_report_one_job_wrote(tmp_path):
    legs = [leg("b", 2, ("tiny-mlp",)), leg("a", 1, ("tiny-cnn",))]
    merged = merge(legs, 2).to_dict()
    one = assemble(copy.deepcopy(ONE_JOB.models), ONE_JOB.environment).to_dict()  # what `check` writes
    assert merged["first_regression"] == ONE_JOB.to_dict()["first_regression"]
    assert [m["name"] for m in merged["models"]] == list(COVERED)  # configured order, not the legs'
    for key in ("verdict", "first_regression", "summary", "models", "environment"):
        assert merged[key] == one[key], key
    assert "shard" not in merged  # the whole run, not a leg of it
    write_report(tmp_path / "merged.json", merge(legs, 2))
    assert load_report(tmp_path / "merged.json").verdict == "regressed"


def test_what_the_change_stopped_checking_is_said_once_from_every_leg(tmp_path):
    """Each leg names the models the change's config dropped (check --changed-since): the merged report
    names them once, and reads back."""
    legs = [leg("a", 1, ("tiny-cnn",)), leg("b", 2, ("tiny-mlp",))]
    legs[0].report.unchecked, legs[1].report.unchecked = ["old", "act.gelu"], ["act.gelu", "old"]
    write_report(tmp_path / "merged.json", merge(legs, 2))
    assert load_report(tmp_path / "merged.json").unchecked == ["act.gelu", "old"]
    legs[0].report.unchecked = legs[1].report.unchecked = None
    assert merge(legs, 2).unchecked is None
    # the baseline files whose rewrite loosened limits, likewise
    legs[1].report.baseline_loosened = ["b/t.msgpack.zst"]
    write_report(tmp_path / "merged.json", merge(legs, 2))
    assert load_report(tmp_path / "merged.json").baseline_loosened == ["b/t.msgpack.zst"]


def test_a_leg_of_no_models_is_a_leg_all_the_same():
    legs = [leg("a", 1, COVERED), leg("b", 2, ())]
    assert [m.name for m in merge(legs, 2).models] == list(COVERED)


def refused(legs: list[Leg], count: int = 2) -> str:
    with pytest.raises(GateError) as info:
        merge(legs, count)
    assert info.value.exit_code == 2
    return str(info.value)


def test_a_model_no_leg_checked_is_refused_naming_the_model_and_the_legs():
    assert refused([leg("parity-gate-report-shard-1-of-2-a1", 1, ("tiny-mlp",))]) == (
        "model `tiny-cnn` was checked by no leg: no report from shard 2/2 "
        "(merged: shard 1/2 (`parity-gate-report-shard-1-of-2-a1`))")
    # Every leg reported, and one left a model out of its own report (a forged leg hiding a regression).
    assert refused([leg("a", 1, ()), leg("b", 2, ("tiny-mlp",))]) == (
        "model `tiny-cnn` was checked by no leg: no leg's report holds it (merged: shard 1/2 (`a`), shard 2/2 (`b`))")


def test_a_model_two_legs_checked_is_refused_naming_both():
    assert refused([leg("a", 1, ("tiny-cnn",)), leg("b", 2, COVERED)]) == (
        "model `tiny-cnn` checked twice: by shard 1/2 (`a`) and shard 2/2 (`b`)")


def test_legs_that_cover_other_models_are_refused():
    forged = leg("b", 2, ("tiny-mlp",), covered=("tiny-mlp",))  # drops the regressed model from the run
    assert refused([leg("a", 1, ()), forged]) == (
        "model `tiny-cnn` is covered by shard 1/2 (`a`) but not by shard 2/2 (`b`): the legs ran other configs")
    extra = leg("b", 2, ("tiny-mlp",), covered=(*COVERED, "tiny-gru"))
    assert refused([leg("a", 1, ("tiny-cnn",)), extra]) == (
        "model `tiny-gru` is covered by shard 2/2 (`b`) but not by shard 1/2 (`a`): the legs ran other configs")
    turned = leg("b", 2, ("tiny-mlp",), covered=COVERED[::-1])
    assert refused([leg("a", 1, ("tiny-cnn",)), turned]) == (
        "shard 1/2 (`a`) and shard 2/2 (`b`) list the models in another order: the legs ran other configs")


def test_a_leg_run_on_fewer_providers_is_refused():
    """`check --shard 2/2 --provider torch-cpu` on the leg holding a model whose shipped graph regressed: its
    report has no ONNX Runtime row to fail, so merged with a full leg it would pass. Twin: the same providers
    on both legs merge, and read back from the report."""
    both = ("torch-cpu:float32", "CPUExecutionProvider:float32")
    a, b = leg("a", 1, ("tiny-cnn",)), leg("b", 2, ("tiny-mlp",))
    a.report.shard = ShardRun(Shard(1, 2), COVERED, both)
    b.report.shard = ShardRun(Shard(2, 2), COVERED, both[:1])
    assert refused([a, b]) == ("shard 1/2 (`a`) ran torch-cpu:float32, CPUExecutionProvider:float32 and "
                               "shard 2/2 (`b`) ran torch-cpu:float32: the legs ran other configs")
    b.report.shard = ShardRun(Shard(2, 2), COVERED, both[::-1])  # the same ones, named in another order
    assert merge([a, b], 2).verdict == "regressed"
    assert parse_report(json.dumps(b.report.to_dict()).encode(), "b.json").shard == b.report.shard


def test_a_model_outside_the_run_is_refused():
    stray = leg("b", 2, ("tiny-mlp", "tiny-cnn"), covered=COVERED)
    stray.report.models[0].name = "tiny-gru"
    assert refused([leg("a", 1, ("tiny-cnn",)), stray]) == (
        "shard 2/2 (`b`) checked model `tiny-gru`, which is not among the 2 models the run covers")


def test_legs_of_another_cut_or_without_a_shard_are_refused():
    assert refused([leg("a", 1, COVERED, count=3)]) == "shard 1/3 (`a`): a leg of 3 shards; this merge expects 2"
    plain = Leg("r.json", copy.deepcopy(ONE_JOB))
    assert refused([plain]) == "`r.json`: not the report of a shard (`check --shard K/N` writes `shard`)"
    assert refused([leg("a", 1, COVERED), leg("b", 1, ())]) == "shard 1/2 has two reports: `a` and `b`"
    assert refused([]) == "no report of any of the 2 shards to merge"


def test_a_legs_shard_is_read_as_untrusted_input():
    text = (REPORTS / "pass.json").read_text()
    for shard, message in (
        ('{"index": 3, "count": 2, "models": []}', "`shard.index`: expected an integer from 1 to count (2), got 3"),
        ('{"index": 1, "count": 0, "models": []}', "`shard.count`: expected an integer from 1 to 256, got 0"),
        ('{"index": 1, "count": 2, "models": ["a", "a"]}', "`shard.models[1]`: names model `a` twice"),
        ('{"index": 1, "count": 2, "models": ["A"]}', "`shard.models[0]`: not a model name: it may only contain"),
        ('{"index": 1, "count": 2, "models": "a"}', "`shard.models`: expected an array, got a string"),
    ):
        doc = text.rstrip().removesuffix("}") + f', "shard": {shard}}}'
        with pytest.raises(GateError) as info:
            parse_report(doc.encode(), "leg.json")
        assert str(info.value).startswith(f"report `leg.json`: {message}"), str(info.value)

"""``layer-tolerances`` rules that match no layer: judged over every case of a configured model, and
only where every case ran. The model's own casts changed per module call."""

from __future__ import annotations

import dataclasses

import pytest

from gate.config import load_config
from gate.verdict.model_audits import casts, unmatched_rules
from tests.support.verdicts import baseline, run, spec

CONFIG = """
[[models]]
name = "net"
factory = "x:y"
inputs = [{ name = "x", shape = [2, 8] }]
batch-sizes = [2, 8]
layer-tolerances = [{ layers = "wide*", floor = 1e-5 }, { layers = "fc_2", floor = 1e-5 }]
"""


def _models(tmp_path):
    path = tmp_path / "parity-gate.toml"
    path.write_text(CONFIG)
    return load_config(path).models


def test_a_rule_is_unmatched_only_when_no_case_ran_a_layer_it_matches(tmp_path):
    models = _models(tmp_path)
    runs = {"net.b2": run(("fc1", "fc2")), "net.b8": run(("fc1", "fc2", "wide"))}
    found = unmatched_rules(models, runs)
    assert {name: [r.pattern for r in rules] for name, rules in found.items()} == \
        {"net.b2": ["fc_2"], "net.b8": ["fc_2"]}
    assert found["net.b2"][0].where == "models[1].layer-tolerances[2].layers"


def test_nothing_is_said_while_a_case_did_not_run(tmp_path):
    models = _models(tmp_path)
    assert unmatched_rules(models, {"net.b2": run(("fc1", "fc2"))}) == {}  # `--model net.b2`: b8 may match
    failed = run(())  # a case that failed before any layer ran
    assert unmatched_rules(models, {"net.b2": run(("fc1", "fc2")), "net.b8": failed}) == {}


@pytest.mark.parametrize("now, fails", [({"b": 2, "c#1": 1}, False), ({"c#1": 1}, True),
                                       ({"b": 2, "c#1": 2}, True)])
def test_the_models_own_casts_changed_per_module_call_fail_at_the_first_call_that_changed(now, fails):
    """Counts per module call, not in total: a cast that moved to another call changed what ships too."""
    r, b = run(("a", "b", "c#1", "(model)")), baseline(names=("a", "b", "c#1", "(model)"))
    b.meta.narrowed, r.meta.narrowed = {"b": 2, "c#1": 1}, now
    found = casts(spec(), r, b, None)
    at = "b" if "b" not in now else "c#1"
    assert [(a.check, a.status, a.layer) for a in found] == ([("casts", "fail", at)] if fails else [])
    if fails and "b" not in now:
        assert "less often than in the baseline, at `b` (2 -> 0 casts)" in found[0].message


def test_casts_are_not_compared_where_the_reference_runs_them_as_written():
    r, b = run(), baseline()
    b.meta.narrowed, r.meta.narrowed = {"b": 2}, {}
    assert casts(dataclasses.replace(spec(), reference_promotion=False), r, b, None) == []


def test_casts_are_not_compared_with_a_baseline_older_than_their_count_nor_to_float32():
    """A baseline with no `narrowed` counted float32 casts in `promoted`: nothing to compare. A cast to
    float32 (eager attention's softmax in float32) is none below float32: no change when it goes."""
    r, b = run(("a", "b", "(model)")), baseline(names=("a", "b", "(model)"))
    b.meta.promoted, r.meta.narrowed = {"b": 2}, {}
    assert casts(spec(), r, b, None) == []
    b.meta.narrowed, r.meta.promoted = {}, {}
    assert casts(spec(), r, b, None) == []

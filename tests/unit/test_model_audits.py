"""``layer-tolerances`` rules that match no layer: judged over every case of a configured model, and
only where every case ran."""

from __future__ import annotations

from gate.config import load_config
from gate.verdict.model_audits import unmatched_rules
from tests.support.verdicts import run

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

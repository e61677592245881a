"""A sharded run against one job, on real models: the bundled examples against their committed baselines,
one of them changed (`faults.cnn_bn_eps`). Each leg runs `parity-gate check --shard K/2` as a process of its
own, `parity-gate merge` makes their reports one, and that report is the one job's: the same models in the
same order, the same verdict and first regression, every row the same (timings aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.verdict.report_file import write_report
from tests.conftest import ROOT, run_cli
from tests.support.this_machine import judging_here, unjudged

CONFIG = """baseline-dir = "{baselines}"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "tiny-cnn"
factory = "faults:cnn_bn_eps"
inputs = [{{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }}]

[[models]]
name = "tiny-transformer"
factory = "examples.zoo:tiny_transformer"
inputs = [{{ name = "x", shape = [2, 8, 16], dtype = "float32" }}]
"""
TIMINGS = {"latency_ms", "latency_p90_ms", "capture_peak_mb"}  # measured anew by every run


def scrubbed(value):
    if isinstance(value, dict):
        return {k: scrubbed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    return value


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    cfg = load_config(ROOT / "pyproject.toml")
    baselines = ROOT / "baselines" if not unjudged(cfg) else judging_here(cfg, cfg.models, tmp_path / "baselines")
    shutil.copy(ROOT / "tests" / "e2e" / "faults.py", tmp_path / "faults.py")
    (tmp_path / "parity-gate.toml").write_text(CONFIG.format(baselines=baselines.as_posix()))
    # No export cache, in the legs as in the one job: each runs the whole path, so each reports it alike.
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)  # baseline paths in the reports are shown relative to where it ran
    return tmp_path


def test_the_merged_legs_are_the_report_of_one_job_checking_every_model(project):
    cfg = load_config(project / "parity-gate.toml")
    write_report(project / "one.json", commands.check(cfg, cfg.models, cfg.providers))
    listed = run_cli("list", "--shard", "1/2", cwd=project, env={"PARITY_GATE_CACHE_DIR": "off"})
    assert listed.returncode == 0, listed.stderr
    # how the plan weighs the recorded seconds is tests/unit/test_shards.py's; here, that the leg says it
    assert "shard 1/2: 1 model of 2 (1 case of 2); recorded seconds per shard: " in listed.stdout
    for k in (1, 2):
        leg = run_cli("check", "--shard", f"{k}/2", "--json", f"leg{k}.json", cwd=project,
                      env={"PARITY_GATE_CACHE_DIR": "off"})
        assert leg.returncode in (0, 1), leg.stderr
        assert f"shard {k}/2: 1 model of 2" in leg.stderr
    merged = run_cli("merge", "leg1.json", "leg2.json", "--shards", "2", "--json", "merged.json", cwd=project)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert "FAILED | first regression: tiny-cnn block1.bn2" in merged.stdout
    one, legs = (json.loads((project / n).read_text()) for n in ("one.json", "merged.json"))
    assert [m["name"] for m in legs["models"]] == ["tiny-cnn", "tiny-transformer"]
    assert (legs["verdict"], legs["first_regression"]["layer"]) == ("regressed", "block1.bn2")
    assert scrubbed(legs) == scrubbed(one)
    shards = [json.loads((project / f"leg{k}.json").read_text())["shard"] for k in (1, 2)]
    assert [s["index"] for s in shards] == [1, 2] and all(s["models"] == ["tiny-cnn", "tiny-transformer"]
                                                          for s in shards)
    # each leg says what it ran the models on: a leg run on fewer providers is refused by the merge
    both = ["CPUExecutionProvider:float32", "torch-cpu:float32"]
    assert all(s["providers"] == both for s in shards), shards

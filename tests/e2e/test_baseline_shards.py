"""A re-recording cut into shards against one job, on real models: the bundled examples. Each leg runs
`parity-gate update-baseline --shard K/2 --out share` in a checkout of its own (as a CI matrix does),
`parity-gate merge --baselines` brings the shares together, and the folder is the one a single
`update-baseline` writes: the same files, the same documents (the measured timings aside), each file the
bytes its leg wrote. A share missing or doubled is refused (exit 2) and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gate.commands.shards import plan
from gate.config import load_config
from gate.config.shards import Shard
from gate.formats.baseline import read_document
from tests.conftest import ROOT, run_cli

CONFIG = """baseline-dir = "baselines"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "tiny-cnn"
factory = "examples.zoo:tiny_cnn"
inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]

[[models]]
name = "tiny-transformer"
factory = "examples.zoo:tiny_transformer"
inputs = [{ name = "x", shape = [2, 8, 16], dtype = "float32" }]
"""
MEASURED = {"latency_ms", "latency_p90_ms", "capture_peak_mb", "seconds"}  # measured anew by every run
ENV = {"PARITY_GATE_CACHE_DIR": "off", "PYTHONPATH": f"{ROOT}"}


def scrubbed(value):
    if isinstance(value, dict):
        return {k: scrubbed(v) for k, v in value.items() if k not in MEASURED}
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    return value


@pytest.fixture
def checkout(tmp_path) -> Path:
    """The repository as each job checks it out: a config, the models, the committed baselines."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "parity-gate.toml").write_text(CONFIG)
    shutil.copytree(ROOT / "examples", repo / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "baselines").mkdir()
    for name in ("tiny-cnn", "tiny-transformer"):
        shutil.copy(ROOT / "baselines" / f"{name}.msgpack.zst", repo / "baselines")
    return repo


def job(checkout: Path, name: str) -> Path:
    copy = checkout.parent / name
    shutil.copytree(checkout, copy)
    return copy


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.msgpack.zst"))}


def test_two_shares_recorded_apart_and_merged_are_one_update(checkout):
    one = job(checkout, "one")
    done = run_cli("update-baseline", cwd=one, env=ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    cfg = load_config(checkout / "parity-gate.toml")
    legs, shared = checkout.parent / "legs", {}
    for k in (1, 2):
        leg = job(checkout, f"leg{k}")
        out = legs / f"parity-gate-baselines-shard-{k}-of-2-a1"
        run = run_cli("update-baseline", "--shard", f"{k}/2", "--out", str(out), cwd=leg, env=ENV)
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"shard {k}/2: 1 model of 2" in run.stderr
        share = json.loads((out / "share.json").read_text())
        # The share is the one `check --shard` runs: one plan, read from the same checkout.
        assert share["recorded"] == [s.name for s in plan(cfg, cfg.models, Shard(k, 2)).models]
        assert files(out) == {n: b for n, b in files(leg / "baselines").items() if n in files(out)}
        assert files(leg / "baselines").keys() == files(one / "baselines").keys()  # the others', kept
        shared.update(files(out))
    final = job(checkout, "final")
    merged = run_cli("merge", str(legs), "--shards", "2", "--baselines", cwd=final, env=ENV)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "MERGED | 2 baseline files from 2 shards" in merged.stdout
    assert files(final / "baselines") == shared  # each file the bytes its leg wrote
    assert shared.keys() == files(one / "baselines").keys()
    for name in files(one / "baselines"):
        alone, together = (read_document(f / "baselines" / name) for f in (one, final))
        assert scrubbed(together) == scrubbed(alone), name
    # A missing share, and a share of the same shard twice: refused, nothing written.
    shutil.copytree(legs / "parity-gate-baselines-shard-1-of-2-a1", checkout.parent / "again")
    for args, said in (([str(legs / "parity-gate-baselines-shard-1-of-2-a1")], "no share from shard 2/2"),
                       ([str(legs), str(checkout.parent / "again")], "shard 1/2 has two shares")):
        before = files(final / "baselines")
        refused = run_cli("merge", *args, "--shards", "2", "--baselines", cwd=final, env=ENV)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert files(final / "baselines") == before
    # A share whose file holds another model's baseline (`check` would refuse it): refused, nothing written.
    one_leg, two_leg = (legs / f"parity-gate-baselines-shard-{k}-of-2-a1" for k in (1, 2))
    (mine,), (theirs,) = ([p for p in leg.iterdir() if p.name.endswith(".msgpack.zst")]
                          for leg in (one_leg, two_leg))
    mine.write_bytes(theirs.read_bytes())
    before = files(final / "baselines")
    refused = run_cli("merge", str(legs), "--shards", "2", "--baselines", cwd=final, env=ENV)
    assert refused.returncode == 2 and f"baseline `{mine.name}` holds model" in refused.stderr, refused.stderr
    assert files(final / "baselines") == before

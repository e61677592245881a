"""One leg's models (gate.commands.shards): a configured model's cases and a sweep's cases stay together,
every case is in exactly one shard, and the shards are weighed by the seconds the baselines record (the
median where a baseline records none, or cannot be read)."""

from __future__ import annotations

import pytest

from gate.commands.shards import plan, unit_of
from gate.config import load_config
from gate.config.shards import Shard
from gate.formats.baseline import write_baseline
from gate.formats.baseline.names import baseline_path
from gate.formats.baseline.sets import empty_set, write_set
from tests.support.baseline_docs import make_document

CONFIG = """baseline-dir = "b"
providers = ["torch-cpu"]

[[models]]
name = "cnn"
factory = "m:cnn"
inputs = [{ name = "x", shape = [2, 4] }]
batch-sizes = [1, 8]
{more}
[[sweeps]]
name = "act"
module = "torch.nn.{act}"
vars = { act = ["ReLU", "GELU", "SiLU"] }
inputs = [{ name = "x", shape = [2, 4] }]
"""
MODEL = '[[models]]\nname = "{name}"\nfactory = "m:{name}"\ninputs = [{{ name = "x", shape = [2, 4] }}]\n'


def project(tmp_path, names=("mlp", "rnn", "vit", "gpt")):
    path = tmp_path / "parity-gate.toml"
    path.write_text(CONFIG.replace("{more}", "".join(MODEL.format(name=n) for n in names)))
    return load_config(path)


def record(cfg, name: str, seconds: float | None) -> None:
    doc = make_document(2, model=name)
    if seconds is not None:
        doc["meta"]["seconds"] = seconds
    write_baseline(baseline_path(cfg.baseline_dir, name), doc)


@pytest.mark.parametrize("count", [1, 2, 3, 5, 9])
def test_every_case_is_in_one_shard_with_the_other_cases_of_its_model_or_sweep(tmp_path, count):
    cfg = project(tmp_path)
    legs = [plan(cfg, cfg.models, Shard(k, count)) for k in range(1, count + 1)]
    names = [m.name for leg in legs for m in leg.models]
    assert sorted(names) == sorted(m.name for m in cfg.models)  # each case once
    for leg in legs:
        assert leg.covered == tuple(m.name for m in cfg.models)  # every leg says what the run covers, in order
        assert list(leg.models) == [m for m in cfg.models if m in leg.models]  # configured order
        for unit in {unit_of(m) for m in leg.models}:
            assert all(m in leg.models for m in cfg.models if unit_of(m) == unit), unit
    assert sum(leg.held for leg in legs) == legs[0].units == 6  # cnn (2 cases), 4 models, the sweep (3 cases)


def test_the_shards_are_weighed_by_the_recorded_seconds_and_the_median_stands_in(tmp_path):
    cfg = project(tmp_path)
    for case in (m.name for m in cfg.models if m.base == "cnn"):
        record(cfg, case, 100.0)
    record(cfg, "mlp", 10.0)
    record(cfg, "rnn", None)  # recorded before costs were
    baseline_path(cfg.baseline_dir, "vit").write_bytes(b"not a baseline")  # `check` says what is wrong
    sweep = empty_set("act")
    for case in (m.name for m in cfg.models if m.sweep is not None):
        doc = make_document(2, model=case)
        doc["meta"]["seconds"] = 1.0
        sweep["cases"][case] = doc
    write_set(baseline_path(cfg.baseline_dir, "act"), sweep)
    leg = plan(cfg, cfg.models, Shard(1, 2))
    # recorded: 100, 100, 10, 1, 1, 1 (median 5.5); rnn, vit and gpt stand in at the median
    assert sum(leg.loads) == pytest.approx(213 + 3 * 5.5)
    assert leg.estimated == 3
    heavy = plan(cfg, cfg.models, Shard(1, 3))
    cnn_shard = next(k for k in (1, 2, 3) if any(m.base == "cnn" for m in plan(cfg, cfg.models, Shard(k, 3)).models))
    assert max(heavy.loads) == heavy.loads[cnn_shard - 1] >= 200.0  # the costliest unit sets the longest leg


def test_a_selection_is_cut_alone(tmp_path):
    cfg = project(tmp_path)
    chosen = cfg.select_models(["cnn", "act"])
    legs = [plan(cfg, chosen, Shard(k, 2)) for k in (1, 2)]
    assert legs[0].covered == tuple(m.name for m in chosen)
    assert {unit_of(m) for leg in legs for m in leg.models} == {"model:cnn", "sweep:act"}

"""The matrix flow on CPU alone (``export``, ``collect``, ``report``): what it says matches ``check`` when a
model fails to build, and bad input (a model no bundle holds, a result file named twice or copied) is
refused in one line naming it. Real exports, real ONNX Runtime sessions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.core.status import ErrorStatus, ModelStatus
from gate.errors import GateError

MODELS = """import torch
from pathlib import Path
from torch import nn


def _mlp(name):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    if (Path(__file__).parent / f"{name}.txt").exists():
        what = (Path(__file__).parent / f"{name}.txt").read_text()
        if what == "raise":
            raise RuntimeError("boom in factory")
        if what == "exit":  # sys.exit(0): ended the check with exit 0 and no report
            raise SystemExit(0)
        with torch.no_grad():
            m[2].weight.mul_(float(what))
    return m


def a():
    return _mlp("a")


def b():
    return _mlp("b")


def c():
    return _mlp("c")
"""
CONFIG = 'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n' + "".join(
    f'\n[[models]]\nname = "{n}"\nfactory = "flow_models:{n}"\ninputs = [{{ name = "x", shape = [2, 8] }}]\n'
    for n in "abc")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("flow")
    (tmp / "flow_models.py").write_text(MODELS)
    (tmp / "parity-gate.toml").write_text(CONFIG)
    cfg = load_config(tmp / "parity-gate.toml")
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def _flow(project: Path, out: Path):
    cfg = load_config(project / "parity-gate.toml")
    commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), out / "export")
    commands.collect(out / "export", cfg.select_providers(["CPUExecutionProvider"]), out / "cpu.msgpack.zst")
    return cfg, commands.report_files(cfg, [out / "export", out / "cpu.msgpack.zst"])


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_model_that_fails_to_build_is_reported_as_check_reports_it_and_the_models_after_it_are_judged(
        project, tmp_path, how):
    """`b`'s factory raises (or calls sys.exit(0)), `c` carries a 1e-4 weight fault: the export wrote `a`
    alone, and the report called `b` and `c` unexported ("no result file holds it"), hiding `c`'s
    regression and `b`'s error. Twin: `check` on the same change says the same."""
    (project / "b.txt").write_text(how)
    (project / "c.txt").write_text("1.0001")
    try:
        cfg, report = _flow(project, tmp_path)
        by_name = {m.name: m for m in report.models}
        assert by_name["b"].error is not None and by_name["b"].error.error_status == ErrorStatus.BUILD_FAIL
        assert ("boom in factory" if how == "raise" else "raised SystemExit") in by_name["b"].error.message
        (ort,) = [p for p in by_name["b"].providers if p.name == "CPUExecutionProvider"]
        assert ort.error_status == ErrorStatus.BUILD_FAIL, ort  # said as it failed, not "export failed"
        assert by_name["c"].status == ModelStatus.REGRESSED and by_name["c"].first_regression.layer == "2"
        assert by_name["a"].status == ModelStatus.PASS
        checked = commands.check(cfg, cfg.models, cfg.providers)
        assert [(m.name, m.status) for m in checked.models] == [(m.name, m.status) for m in report.models]
    finally:
        (project / "b.txt").unlink()
        (project / "c.txt").unlink()


def test_collect_refuses_a_model_no_bundle_holds_and_report_a_result_file_named_twice(project, tmp_path):
    """`collect --model mlpp` wrote an empty result file and exited 0; `report` read a file named twice twice.
    Twins: a glob that matches collects what it names; two files of the same results report."""
    cfg, report = _flow(project, tmp_path)
    assert report.verdict == "pass"
    cpu = cfg.select_providers(["CPUExecutionProvider"])
    with pytest.raises(GateError, match=r"holds no exported model matching `mlpp` \(exported: a, b, c\)"):
        commands.collect(tmp_path / "export", cpu, tmp_path / "none.msgpack.zst", models=["mlpp"])
    assert not (tmp_path / "none.msgpack.zst").exists()
    runs = commands.collect(tmp_path / "export", cpu, tmp_path / "ab.msgpack.zst", models=["[ab]"])
    assert [r.name for r in runs] == ["a", "b"]
    files = [tmp_path / "export", tmp_path / "cpu.msgpack.zst"]
    with pytest.raises(GateError, match=r"result file `.*cpu.msgpack.zst` is named twice"):
        commands.report_files(cfg, [*files, files[1]])
    # two runners that both ran a provider (here: the same results) are two files: the report takes them
    shutil.copy(files[1], tmp_path / "copy.msgpack.zst")
    assert commands.report_files(cfg, [*files, tmp_path / "copy.msgpack.zst"]).verdict == "pass"

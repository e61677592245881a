"""A required provider whose matrix leg failed or uploaded nothing fails the report, naming that
leg, instead of passing with the provider "not checked": tiny-cnn exported with torch and collected
on the CPU EP for real, the CUDA leg's result file never written."""

from __future__ import annotations

import json

import pytest

from gate.commands.matrix import unrun_reason
from tests.conftest import run_cli
from tests.e2e.test_gate import baselines, write_config  # noqa: F401 (a fixture)

CUDA = "CUDAExecutionProvider"


@pytest.fixture(scope="module")
def legs(tmp_path_factory, baselines):  # noqa: F811
    """The export and the CPU leg's result file; the CUDA leg left nothing."""
    tmp = tmp_path_factory.mktemp("legs")
    write_config(tmp, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=baselines,
                 providers=f'["torch-cpu", "CPUExecutionProvider", "{CUDA}"]')
    for args in (("export", "--out", "export", "--provider", "torch-cpu"),
                 ("collect", "--from", "export", "--provider", "CPUExecutionProvider", "--out", "cpu.msgpack.zst")):
        proc = run_cli(*args, cwd=tmp)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp


def test_an_unrequired_leg_that_uploaded_nothing_is_not_checked(legs):
    proc = run_cli("report", "export", "cpu.msgpack.zst", "--json", "r.json", cwd=legs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cuda = next(p for p in json.loads((legs / "r.json").read_text())["models"][0]["providers"] if p["name"] == CUDA)
    assert (cuda["status"], cuda["skip"]) == ("skipped", "unrun")


@pytest.mark.parametrize("how", [("--require", CUDA), ("--require", "cuda")])
def test_a_required_leg_that_uploaded_nothing_fails_the_report_naming_the_leg(legs, how):
    proc = run_cli("report", "export", "cpu.msgpack.zst", *how, "--json", "r.json", "--markdown", "r.md", cwd=legs)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads((legs / "r.json").read_text())
    cuda = next(p for p in report["models"][0]["providers"] if p["name"] == CUDA)
    assert (report["verdict"], cuda["status"], cuda["error_status"]) == ("error", "error", "NO_RESULT")
    line = unrun_reason(CUDA)
    assert line == (f"{CUDA} is required, but no result file holds it: the matrix leg that runs {CUDA} failed, was "
                    "skipped or uploaded nothing")
    assert cuda["reason"] == line and line in " ".join(proc.stdout.split())
    assert "not checked" not in (legs / "r.md").read_text() and line in (legs / "r.md").read_text()


def test_the_action_passes_require_through_the_environment(legs):
    proc = run_cli("report", "export", "cpu.msgpack.zst", cwd=legs, env={"PARITY_GATE_REQUIRE": CUDA})
    assert proc.returncode == 3


def test_requiring_a_provider_the_config_does_not_name_is_a_usage_error(legs):
    proc = run_cli("report", "export", "cpu.msgpack.zst", "--require", "TensorrtExecutionProvider", cwd=legs)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("--require TensorrtExecutionProvider: not a provider parity-gate.toml "
                                        f"configures (torch-cpu, CPUExecutionProvider, {CUDA})")

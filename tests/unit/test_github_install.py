"""gate.github.install: what the action installs per mode, where torch comes from, the cache key."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.github.install import CPU_INDEX, ONNX, TORCH, packages, plan, source_digest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
HOSTED = {"RUNNER_ENVIRONMENT": "github-hosted", "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64"}


def env(mode: str, **kw: str) -> dict[str, str]:
    return {**HOSTED, "PG_MODE": mode, "GITHUB_ACTION_PATH": str(ROOT), **kw}


def test_modes_that_run_no_model_install_the_core_only():
    assert packages("comment", "onnxruntime") == [] and packages("report", "onnxruntime-gpu") == []
    assert packages("collect", "onnxruntime-gpu") == ["onnx>=1.16", "onnxruntime-gpu>=1.18"]
    assert packages("export", "onnxruntime") == ["torch>=2.5", "onnx>=1.16", "onnxscript>=0.2"]
    assert packages("check", "none") == ["torch>=2.5", "onnx>=1.16", "onnxscript>=0.2"]
    assert packages("update-baseline", "onnxruntime==1.31.1")[-1] == "onnxruntime==1.31.1"


def test_requirements_match_the_packages_extras():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert list(TORCH) + ["onnxruntime>=1.18"] == extras["torch"]
    assert list(ONNX) + ["onnxruntime>=1.18"] == extras["ort"]
    assert list(TORCH) + ["onnxruntime-gpu>=1.18"] == extras["gpu"]
    assert list(ONNX) + ["onnxruntime-gpu>=1.18"] == extras["ort-gpu"]


@pytest.mark.parametrize(("choice", "gpu", "packages_", "dist"), [
    ("auto", True, "onnx>=1.16 onnxruntime-gpu>=1.18", "onnxruntime-gpu"),
    ("auto", False, "onnx>=1.16 onnxruntime>=1.18", "onnxruntime"),
    ("", True, "onnx>=1.16 onnxruntime-gpu>=1.18", "onnxruntime-gpu"),
    ("gpu", False, "onnx>=1.16 onnxruntime-gpu>=1.18", "onnxruntime-gpu"),
    ("cpu", True, "onnx>=1.16 onnxruntime>=1.18", "onnxruntime"),
    ("onnxruntime-openvino", True, "onnx>=1.16 onnxruntime-openvino>=1.18", "onnxruntime-openvino"),
    ("onnxruntime_gpu==1.23.2", False, "onnx>=1.16 onnxruntime_gpu==1.23.2", "onnxruntime-gpu"),
    ("none", True, "onnx>=1.16", ""),
])
def test_onnxruntime_input_picks_one_distribution(choice, gpu, packages_, dist):
    out = plan(env("collect", PG_ONNXRUNTIME=choice), has_gpu=gpu)
    assert (out["packages"], out["onnxruntime"]) == (packages_, dist)
    assert plan(env("comment", PG_ONNXRUNTIME=choice), has_gpu=gpu)["onnxruntime"] == ""
    assert plan(env("export", PG_ONNXRUNTIME=choice), has_gpu=gpu)["onnxruntime"] == ""  # export runs no ONNX graph


def test_the_gpu_build_changes_the_cache_key():
    assert plan(env("check"), has_gpu=True)["key"] != plan(env("check", PG_TORCH_BUILD="default"), has_gpu=False)["key"]


@pytest.mark.parametrize(("mode", "extra", "gpu", "build"), [
    ("check", {}, False, "cpu"),
    ("check", {}, True, "default"),
    ("check", {"RUNNER_ENVIRONMENT": "self-hosted"}, False, "default"),
    ("check", {"RUNNER_OS": "macOS"}, False, "default"),
    ("check", {"PG_TORCH_BUILD": "default"}, False, "default"),
    ("check", {"PG_TORCH_BUILD": "cpu", "RUNNER_ENVIRONMENT": "self-hosted"}, True, "cpu"),
    ("comment", {}, False, "none"),
    ("collect", {}, False, "none"),
])
def test_torch_is_the_cpu_build_on_hosted_linux_without_a_gpu(mode, extra, gpu, build):
    out = plan(env(mode, **extra), has_gpu=gpu)
    assert out["torch-build"] == build
    assert out["index-args"] == (f"--extra-index-url {CPU_INDEX}" if build == "cpu" else "")


def test_the_key_follows_the_requirements_and_nothing_else(tmp_path):
    pins = tmp_path / "constraints.txt"
    pins.write_text("torch==2.14.1\n")
    base = plan(env("check", PG_CONSTRAINTS=str(pins)), has_gpu=False)
    assert base["key"] == plan(env("check", PG_CONSTRAINTS=str(pins), PG_MODELS="other"), has_gpu=False)["key"]
    pins.write_text("torch==2.15.0\n")
    assert plan(env("check", PG_CONSTRAINTS=str(pins)), has_gpu=False)["key"] != base["key"]
    assert plan(env("check", PG_EXTRA_PIP_ARGS="torchvision"), has_gpu=False)["key"] != base["key"]
    assert plan(env("check", RUNNER_ARCH="ARM64", PG_CONSTRAINTS=str(pins)), has_gpu=False)["key"] != base["key"]
    assert plan(env("comment"))["key"] == plan(env("report"))["key"]  # one core environment
    assert base["key"].startswith("parity-gate-env-Linux-X64-CPython-")


def test_the_key_follows_the_actions_own_sources(tmp_path):
    copy = tmp_path / "action"
    shutil.copytree(ROOT / "gate", copy / "gate", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy2(ROOT / name, copy / name)
    before = source_digest(copy)
    (copy / "gate" / "render" / "text.py").write_text("# changed\n", encoding="utf-8")
    assert source_digest(copy) != before


def test_the_plan_runs_as_a_script_before_parity_gate_is_installed(tmp_path):
    pins = tmp_path / "pins.txt"
    pins.write_text("onnxruntime==1.31.1\n")
    proc = subprocess.run([sys.executable, "-S", str(ROOT / "gate" / "github" / "install.py")],
                          env={**env("collect", PG_CONSTRAINTS=str(pins)), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    assert lines["packages"] == "onnx>=1.16 onnxruntime>=1.18" and lines["constraints"] == str(pins)
    missing = subprocess.run([sys.executable, str(ROOT / "gate" / "github" / "install.py")],
                             env={**env("check", PG_CONSTRAINTS=str(tmp_path / "nope.txt")), "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "constraints file" in missing.stderr

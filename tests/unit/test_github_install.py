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


def key_in(folder: Path, mode: str = "check", **kw: str) -> str:
    """The key the action's plan step computes in ``folder`` (where pip runs, so relative paths resolve there)."""
    proc = subprocess.run([sys.executable, "-S", str(ROOT / "gate" / "github" / "install.py")],
                          env={**env(mode, **kw), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())["key"]


def test_a_changed_requirements_file_changes_the_key(tmp_path):
    (tmp_path / "requirements.txt").write_text("torchvision==0.29.1\n-r more.txt\n")
    (tmp_path / "more.txt").write_text("timm==1.0.0\n")
    args = {"PG_EXTRA_PIP_ARGS": "torchvision -r requirements.txt"}
    before = key_in(tmp_path, **args)
    assert key_in(tmp_path, **args) == before  # same contents, same key
    (tmp_path / "requirements.txt").write_text("torchvision==0.30.0\n-r more.txt\n")
    bumped = key_in(tmp_path, **args)
    assert bumped != before
    (tmp_path / "more.txt").write_text("timm==1.0.1\n")  # a file the requirements file includes
    assert key_in(tmp_path, **args) not in (before, bumped)
    for spelled in ("--requirement requirements.txt", "--requirement=requirements.txt", "-rrequirements.txt"):
        assert key_in(tmp_path, PG_EXTRA_PIP_ARGS=spelled) == key_in(tmp_path, PG_EXTRA_PIP_ARGS=spelled)


def test_files_a_constraints_file_includes_and_local_packages_are_part_of_the_key(tmp_path):
    (tmp_path / "pins.txt").write_text("-c base-pins.txt\n")
    (tmp_path / "base-pins.txt").write_text("numpy==2.1.0\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname='pkg'\ndependencies=['numpy']\n")
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    args = {"PG_CONSTRAINTS": str(tmp_path / "pins.txt"), "PG_EXTRA_PIP_ARGS": "./pkg -e ./pkg"}
    before = key_in(tmp_path, **args)
    (tmp_path / "base-pins.txt").write_text("numpy==2.2.0\n")
    pins = key_in(tmp_path, **args)
    assert pins != before
    (tmp_path / "pkg" / "mod.py").write_text("x = 2\n")  # installed from the folder: its sources count
    assert key_in(tmp_path, **args) != pins
    editable = key_in(tmp_path, PG_EXTRA_PIP_ARGS="-e ./pkg")
    (tmp_path / "pkg" / "mod.py").write_text("x = 3\n")  # editable: its sources are not installed
    assert key_in(tmp_path, PG_EXTRA_PIP_ARGS="-e ./pkg") == editable
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname='pkg'\ndependencies=['numpy', 'scipy']\n")
    assert key_in(tmp_path, PG_EXTRA_PIP_ARGS="-e ./pkg") != editable


def test_a_folder_too_large_to_hash_is_never_restored_from_the_cache(tmp_path, monkeypatch):
    from gate.github import install

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    for i in range(3):
        (tmp_path / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    monkeypatch.setattr(install, "MAX_FILES", 3)  # at the limit: hashed, one key
    out = plan(env("check", PG_EXTRA_PIP_ARGS="./pkg"), has_gpu=False)
    assert out["unhashed"] == "" and plan(env("check", PG_EXTRA_PIP_ARGS="./pkg"), has_gpu=False)["key"] == out["key"]

    monkeypatch.setattr(install, "MAX_FILES", 2)  # one past it: a key no later run shares
    out = plan(env("check", PG_EXTRA_PIP_ARGS="./pkg"), has_gpu=False)
    assert out["unhashed"] == str(tmp_path / "pkg")
    assert plan(env("check", PG_EXTRA_PIP_ARGS="./pkg"), has_gpu=False)["key"] != out["key"]

"""gate.github.ortdist: which ONNX Runtime distributions are installed, which one Python imports,
and the action's post-install step that leaves exactly one (real pip, real venvs, real files)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from gate.github import ortdist
from tests.support import tools

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "gate" / "github" / "ortdist.py"


def fake_distribution(site: Path, name: str, version: str) -> None:
    """A distribution as pip records it: dist-info with METADATA and RECORD, one file of its own."""
    folder = name.replace("-", "_")
    info = site / f"{folder}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    own = site / f"{folder}_marker.py"
    own.write_text("")
    (info / "RECORD").write_text(f"{own.name},,\n{info.name}/METADATA,,\n{info.name}/INSTALLER,,\n{info.name}/RECORD,,\n")


def test_this_environment_has_exactly_the_cpu_build_and_imports_it():
    assert list(ortdist.installed()) == ["onnxruntime"]
    assert ortdist.imported() == "onnxruntime"
    assert ortdist.conflict(ortdist.installed()) is None


def test_a_second_distribution_on_the_path_is_a_conflict(tmp_path):
    fake_distribution(tmp_path, "onnxruntime-gpu", "1.23.2")
    found = ortdist.installed([str(tmp_path), *sys.path])
    assert list(found) == ["onnxruntime", "onnxruntime-gpu"] and found["onnxruntime-gpu"] == "1.23.2"
    warning = ortdist.conflict(found)
    assert warning.startswith("2 ONNX Runtime distributions are installed (onnxruntime ") and "onnxruntime-gpu 1.23.2" in warning


def test_the_openvino_environment_imports_the_openvino_build():
    python = os.environ.get("PARITY_GATE_OPENVINO_PYTHON")
    if not python:
        tools.missing("PARITY_GATE_OPENVINO_PYTHON is not set (scripts/test.sh builds .venv-openvino)")
    proc = subprocess.run([python, "-c", "from gate.github import ortdist; print(ortdist.imported(), "
                           "list(ortdist.installed()))"], capture_output=True, text=True, env={**os.environ,
                          "PYTHONPATH": str(ROOT)})
    assert proc.stdout.strip() == "onnxruntime-openvino ['onnxruntime-openvino']", proc.stderr


@pytest.mark.parametrize(("spec", "name"), [("onnxruntime-gpu==1.23.2", "onnxruntime-gpu"), ("onnxruntime", "onnxruntime"),
                                            ("onnxruntime_openvino>=1.20", "onnxruntime-openvino"),
                                            ("onnxruntime-gpu[cuda,cudnn]", "onnxruntime-gpu")])
def test_distribution_name_of_a_requirement(spec, name):
    assert ortdist.distribution_name(spec) == name


def test_gpu_providers_name_their_distribution():
    from gate.config.providers import fix_for, is_gpu

    assert is_gpu("TensorrtExecutionProvider") and is_gpu("torch-compile-cuda")
    assert not is_gpu("CPUExecutionProvider") and not is_gpu("OpenVINOExecutionProvider")
    assert fix_for("CUDAExecutionProvider").startswith("onnxruntime-gpu instead of onnxruntime")
    assert fix_for("DmlExecutionProvider").startswith("onnxruntime-directml")
    assert "CUDA build of torch" in fix_for("torch-cuda")


@pytest.fixture(scope="module")
def env_with_pip(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(folder)
    return folder


def site_of(env: Path) -> Path:
    return next((env / "lib").glob("python*/site-packages"))


def ensure(env: Path, wanted: str) -> subprocess.CompletedProcess:
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}
    return subprocess.run([str(env / "bin" / "python"), str(SCRIPT), "ensure", wanted], capture_output=True,
                          text=True, env=offline)


def test_ensure_uninstalls_the_other_distribution(env_with_pip):
    site = site_of(env_with_pip)
    fake_distribution(site, "onnxruntime", "1.31.1")
    fake_distribution(site, "onnxruntime-gpu", "1.31.1")
    proc = ensure(env_with_pip, "onnxruntime-gpu==1.31.1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "removing onnxruntime: only onnxruntime-gpu may provide onnxruntime here" in proc.stderr
    assert "ONNX Runtime distribution: onnxruntime-gpu 1.31.1" in proc.stdout
    assert not (site / "onnxruntime_marker.py").exists() and not list(site.glob("onnxruntime-*.dist-info"))


def test_ensure_fails_when_the_wanted_one_is_not_installed(env_with_pip):
    site = site_of(env_with_pip)
    for info in site.glob("onnxruntime*.dist-info"):
        subprocess.run([str(env_with_pip / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q",
                        info.name.split("-")[0].replace("_", "-")], check=True, capture_output=True)
    fake_distribution(site, "onnxruntime", "1.31.1")
    proc = ensure(env_with_pip, "onnxruntime-openvino")
    assert proc.returncode == 2
    assert "::error title=parity-gate::expected onnxruntime-openvino as the only ONNX Runtime distribution, found: none" \
        in proc.stderr


def test_doctor_names_the_imported_distribution_and_warns_about_a_second_one(tmp_path):
    from tests.conftest import run_cli

    proc = run_cli("doctor", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    version = ortdist.installed()["onnxruntime"]
    assert f"distribution imports onnxruntime (installed: onnxruntime {version})" in proc.stdout
    assert "CPUExecutionProvider" in proc.stdout and "warning" not in proc.stdout
    fake_distribution(tmp_path / "site", "onnxruntime-gpu", "1.23.2")
    both = run_cli("doctor", cwd=tmp_path, env={"PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path / 'site'}"})
    assert "(installed: onnxruntime " in both.stdout and "onnxruntime-gpu 1.23.2)" in both.stdout
    assert "warning: 2 ONNX Runtime distributions are installed" in " ".join(both.stdout.split())


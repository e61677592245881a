"""The released package: `python -m build` makes an sdist and a wheel with the compiled kernel,
`twine check` accepts both, and the wheel installed into a clean venv (core dependencies only,
no torch, onnx or onnxruntime) runs `doctor`, posts a comment, merges result files, and refuses
`check` in one line naming the extra it needs.

Offline: the build uses this environment's setuptools/cffi (--no-isolation) and the clean venv
installs from the wheelhouse scripts/test.sh prepares (tests/support/clean_venv.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from tests.support import tools
from tests.support.clean_venv import CORE, ROOT, bin_dir, make_venv, offline_env, wheelhouse
from tests.support.fake_github import FakeGitHub
from tests.support.this_machine import judging_here

REPORTS = ROOT / "tests" / "data" / "reports"
TOKEN = "ghs_packageTestToken"

pytestmark = tools.needs(next((f"`{tool}` is not installed (pip install -e '.[test]' installs it)"
                               for tool in ("build", "twine") if importlib.util.find_spec(tool) is None), None))


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          env={**os.environ, "PARITY_GATE_REQUIRE_NATIVE": "1"},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def core_venv(dist, tmp_path_factory) -> Path:
    wheelhouse()
    [wheel] = dist.glob("parity_gate-*.whl")
    return make_venv(tmp_path_factory.mktemp("core") / "venv", str(wheel))


def run(venv: Path, *args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    exe = bin_dir(venv) / "parity-gate"
    return subprocess.run([str(exe), *args], cwd=cwd, env={**offline_env(), **env}, capture_output=True, text=True,
                          timeout=300)


def test_sdist_and_wheel_pass_twine_check_and_carry_the_kernel(dist):
    [sdist], [wheel] = list(dist.glob("*.tar.gz")), list(dist.glob("*.whl"))
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert any(n.endswith("gate/fingerprint/src/pgfp.c") for n in names)
    assert any(n.endswith("/setup.py") for n in names)
    with zipfile.ZipFile(wheel) as z:
        members = z.namelist()
        metadata = z.read(next(n for n in members if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.startswith("gate/fingerprint/_native") for n in members), "the wheel has no compiled kernel"
    assert "Provides-Extra: torch" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    assert not any(name in r for r in core for name in ("torch", "onnx")), core


def test_core_install_runs_doctor_without_torch_or_onnx(core_venv):
    py = str(bin_dir(core_venv) / "python")
    probe = subprocess.run([py, "-c", "import importlib.util as u; print([m for m in ('torch', 'onnx', "
                            "'onnxruntime', 'onnxscript') if u.find_spec(m)])"], capture_output=True, text=True)
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr
    proc = run(core_venv, "doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "backend      native" in proc.stdout
    assert "torch        not installed" in proc.stdout
    listed = next(line for line in proc.stdout.splitlines() if line.startswith("commands"))
    names, _, why = listed.split(None, 1)[1].partition(" (")
    assert set(names.split(", ")) == {"report", "merge", "list", "show", "diff-driver", "doctor", "comment",
                                      "status"}
    assert why == "running models needs: pip install 'parity-gate[torch]')"


def test_core_install_refuses_check_in_one_line_naming_the_extra(core_venv):
    proc = run(core_venv, "check", cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: `parity-gate check` needs torch, onnx, onnxscript, onnxruntime; not installed here: torch, onnx, "
        "onnxscript, onnxruntime. Install them: pip install 'parity-gate[torch]' (on a GPU runner: 'parity-gate[gpu]')"]


def test_core_install_posts_the_comment(core_venv, tmp_path):
    event = tmp_path / "event.json"
    pull = {"number": 7, "head": {"sha": "a" * 40}}
    event.write_text(json.dumps({"pull_request": pull, "repository": {"full_name": "octo/models"}}))
    with FakeGitHub(token=TOKEN) as github:
        github.open_pull("octo/models", pull)  # the changed files come from the API (no baseline among them)
        proc = run(core_venv, "comment", "--report", str(REPORTS / "regressed.json"), GITHUB_TOKEN=TOKEN,
                   GITHUB_API_URL=github.url, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event),
                   GITHUB_REPOSITORY="octo/models")
        comments = github.issue_comments("octo/models", 7)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(comments) == 1 and "regressed at layer `conv2`" in comments[0]["body"]


def test_core_install_merges_result_files(core_venv, tmp_path):
    # The committed baselines; where their runtime entries (x86_64) judge no runtime of this
    # machine, with this machine's recorded beside the committed reference.
    committed = load_config(ROOT / "pyproject.toml")
    judging_here(committed, committed.models, tmp_path / "baselines")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    text = (ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text[text.index("[tool.parity-gate]"):])
    cfg = load_config(tmp_path / "pyproject.toml")  # the torch side runs here, in the test's environment
    commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), tmp_path / "export")
    commands.collect(tmp_path / "export", cfg.select_providers(["CPUExecutionProvider"]), tmp_path / "cpu.msgpack.zst")
    proc = run(core_venv, "report", "export", "cpu.msgpack.zst", "--json", "report.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "pass" and report["environment"]["torch"] is None
    assert [m["name"] for m in report["models"]] == ["tiny-cnn", "tiny-transformer"]
    assert "PASSED | 2 models" in proc.stdout


def test_core_dependencies_are_the_documented_set():
    tomllib = pytest.importorskip("tomllib")

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [d.split(">")[0].split("=")[0].split(";")[0].strip() for d in deps]
    assert [n for n in names if n != "tomli"] == list(CORE)

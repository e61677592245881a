"""Installing parity-gate where the C kernel cannot be compiled (CC=false: a compiler that
always fails): the install still succeeds with a one-line warning, the NumPy backend runs,
and the CLI says why in one line; with PARITY_GATE_REQUIRE_NATIVE=1 the install fails and
names the cause. Real builds with pip (no build isolation, no index: offline)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "gate", src / "gate", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    return src


def _wheel(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "PARITY_GATE_REQUIRE_NATIVE"}
    full.update(CC="false", **env)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-v",
           "-w", str(tmp_path / "dist"), "./src"]
    return subprocess.run(cmd, cwd=tmp_path, env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def fallback_install(tmp_path_factory):
    """The wheel built without a working compiler, unpacked as an installed package."""
    tmp = tmp_path_factory.mktemp("nocc")
    _source(tmp)
    r = _wheel(tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = list((tmp / "dist").glob("parity_gate-*.whl"))
    assert len(wheels) == 1
    site = tmp / "site"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(site)
    return tmp, site, r.stdout + r.stderr


def _run(tmp: Path, site: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "PARITY_GATE_BACKEND"}
    full.update(PYTHONPATH=str(site), **env)
    return subprocess.run([sys.executable, *args], cwd=tmp, env=full, capture_output=True, text=True, timeout=300)


def test_install_without_a_compiler_succeeds_with_one_warning_line(fallback_install):
    _, site, log = fallback_install
    warnings = [line for line in log.splitlines() if "parity-gate: could not compile" in line]
    assert len(warnings) == 1, log[-3000:]
    assert warnings[0].strip().startswith("WARNING: parity-gate: could not compile the native fingerprint kernel")
    assert warnings[0].rstrip().endswith("using the NumPy backend")
    assert not list(site.rglob("_native*.so")), "no extension in a build without a compiler"


def test_fallback_install_runs_the_numpy_backend_and_says_why(fallback_install):
    tmp, site, _ = fallback_install
    code = (
        "import gate.fingerprint as F, numpy as np; print(F.__file__); print(F.backend); "
        "print(F.native_error); print(F.fingerprint(np.arange(5.0)).quantiles[4])"
    )
    r = _run(tmp, site, "-c", code)
    assert r.returncode == 0, r.stderr
    where, backend, why, q50 = r.stdout.splitlines()
    assert where.startswith(str(site))
    assert (backend, q50) == ("numpy", "2.0")
    assert why.startswith("native fingerprint kernel unavailable")

    doctor = _run(tmp, site, "-m", "gate.cli", "doctor")
    assert doctor.returncode == 0, doctor.stderr
    line = next(x for x in doctor.stdout.splitlines() if x.startswith("backend"))
    assert "numpy (native fingerprint kernel unavailable" in line

    forced = _run(tmp, site, "-c", "import gate.fingerprint", PARITY_GATE_BACKEND="native")
    assert forced.returncode != 0
    assert "PARITY_GATE_BACKEND=native but native fingerprint kernel unavailable" in forced.stderr


def test_commands_that_fingerprint_print_a_one_line_notice(fallback_install, tmp_path):
    tmp, site, _ = fallback_install
    # collect on an empty export folder: fails after the notice, without running a model
    r = _run(tmp, site, "-m", "gate.cli", "collect", "--from", str(tmp_path), "--out", str(tmp_path / "r.msgpack.zst"),
             "--provider", "CPUExecutionProvider")
    notices = [line for line in r.stderr.splitlines() if line.startswith("notice:")]
    assert len(notices) == 1, r.stderr
    assert "native fingerprint kernel unavailable" in notices[0] and "NumPy backend" in notices[0]


def test_required_native_build_fails_and_names_the_cause(tmp_path):
    _source(tmp_path)
    r = _wheel(tmp_path, PARITY_GATE_REQUIRE_NATIVE="1")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "parity-gate: native fingerprint kernel failed to build (PARITY_GATE_REQUIRE_NATIVE=1)" in out
    assert not list(tmp_path.glob("dist/*.whl"))

"""Real, clean virtual environments for the install tests, offline.

``scripts/test.sh`` downloads the core dependencies (and the build requirements) into a
wheelhouse once; tests install from it with ``--no-index``, so nothing is downloaded while the
tests run. Without a wheelhouse the tests that need one are skipped (outside CI) with the
command that makes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import tools

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(os.environ.get("PARITY_GATE_WHEELHOUSE") or ROOT / ".cache" / "wheelhouse")
# What the core install needs, plus what building parity-gate from source needs.
CORE = ("numpy", "zstandard", "msgpack", "rich", "typer", "cffi")
BUILD = ("setuptools>=77", "wheel")


def wheelhouse() -> Path:
    if not any(WHEELHOUSE.glob("numpy-*.whl")):
        reason = (f"no wheelhouse at {WHEELHOUSE} (scripts/test.sh makes it: pip download -d {WHEELHOUSE} "
                  f"{' '.join(CORE + BUILD)})")
        tools.missing(reason)
    return WHEELHOUSE


def bin_dir(venv: Path) -> Path:
    return venv / ("Scripts" if sys.platform == "win32" else "bin")


def offline_env(**extra: str) -> dict[str, str]:
    """pip that reads only the wheelhouse: no index, no user or site config."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV")) and k != "PARITY_GATE_BACKEND"}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse()), PIP_CONFIG_FILE=os.devnull,
               PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def make_venv(where: Path, *requirements: str) -> Path:
    """A fresh venv (from the interpreter running the tests) with ``requirements`` installed offline."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(where)], check=True, capture_output=True, timeout=300)
    if requirements:
        proc = subprocess.run([str(bin_dir(where) / "python"), "-m", "pip", "install", "-q", *requirements],
                              env=offline_env(), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return where

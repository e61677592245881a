"""Shared fixtures: the repository root, a way to write throwaway configs, and the `needs_tool` mark
(tests/support/tools.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import tools

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "needs_tool(absent): skip when a tool is missing (absent: the reason), "
                            "fail instead under PARITY_GATE_REQUIRE_TOOLS=1 (tests/support/tools.py)")


def pytest_runtest_setup(item) -> None:
    # after the skipif marks (the skipping plugin runs first), before any fixture is built
    for mark in item.iter_markers("needs_tool"):
        if mark.args and mark.args[0]:
            tools.missing(mark.args[0])


def regold() -> bool:
    """Whether to rewrite golden files from what the code produces now, instead of comparing
    with them: ``PARITY_GATE_REGOLD=1`` (tests/README.md). Review the diff before committing."""
    return os.environ.get("PARITY_GATE_REGOLD", "") not in ("", "0")


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``parity-gate`` as a user runs it: a real process, real exit code, real stderr."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "gate.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(autouse=True, scope="session")
def _export_cache(tmp_path_factory):
    """The session's own export cache, never the user's ~/.cache (set before any fixture runs a
    check; subprocesses inherit it). Entries are content-addressed: tests that need a cold cache
    point PARITY_GATE_CACHE_DIR at an empty folder of their own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path_factory.mktemp("export-cache")))
        mp.delenv("PARITY_GATE_FULL", raising=False)
        yield

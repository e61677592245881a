"""Tests that need a tool this machine may lack (the aarch64 cross compiler and qemu, Chromium and
Mermaid, actionlint and zizmor, the OpenVINO environment, the wheelhouse, sanitizer runtimes, a package
the `test` extra installs, ...) skip without it and say what to install. Under PARITY_GATE_REQUIRE_TOOLS=1,
which CI sets (.ci/run) after scripts/test.sh has installed them, a missing tool fails the test instead:
CI never passes a test it did not run. Every such skip goes through `missing` (or `needs`, `executable`,
`module`), never a bare ``pytest.skip``. Skips that are not about a missing tool (no CUDA device, the
NumPy backend's pass) stay skips; tests/README.md lists them."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REQUIRE_TOOLS = "PARITY_GATE_REQUIRE_TOOLS"


def required() -> bool:
    return os.environ.get(REQUIRE_TOOLS, "") not in ("", "0")


def missing(reason: str) -> NoReturn:
    """Skip for ``reason`` (what is missing and how to install it), or fail where tools are required.
    Also at module level, where a failure is a collection error."""
    if required():
        pytest.fail(f"{reason} [{REQUIRE_TOOLS}=1: scripts/test.sh must have installed it]", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def needs(absent: str | None) -> pytest.MarkDecorator:
    """A mark for a test or module (``pytestmark``) that needs a tool: ``absent`` is None when the tool
    is here, else the reason; tests/conftest.py calls `missing` with it before the test's fixtures."""
    return pytest.mark.needs_tool(absent)


def executable(name: str, install: str) -> str:
    """The path of the program ``name``, on the PATH or beside this interpreter (a venv's bin/, where
    pip puts it), else `missing` with how to ``install`` it."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if not found:
        missing(f"{name} is not installed ({install})")
    return found


def module(name: str, install: str = "pip install -e '.[test]' installs it") -> ModuleType:
    """The module ``name`` imported, else `missing` (``pytest.importorskip`` that CI cannot skip)."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        missing(f"{name} cannot be imported ({install}): {err}")

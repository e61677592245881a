"""Tests that need a tool this machine may lack (the aarch64 cross compiler and qemu, Chromium and
Mermaid, actionlint, the OpenVINO environment, the wheelhouse, sanitizer runtimes, ...) skip without
it and say what to install. Under PARITY_GATE_REQUIRE_TOOLS=1, which CI sets (.ci/run,
.github/workflows/ci.yml) after scripts/test.sh has installed them, a missing tool fails the test
instead: CI never passes a test it did not run. Skips that are not about a missing tool (no CUDA
device, the NumPy backend's pass) stay skips; tests/README.md lists them."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_TOOLS = "PARITY_GATE_REQUIRE_TOOLS"


def required() -> bool:
    return os.environ.get(REQUIRE_TOOLS, "") not in ("", "0")


def missing(reason: str) -> NoReturn:
    """Skip for ``reason`` (what is missing and how to install it), or fail where tools are required."""
    if required():
        pytest.fail(f"{reason} [{REQUIRE_TOOLS}=1: scripts/test.sh must have installed it]", pytrace=False)
    pytest.skip(reason)


def needs(absent: str | None) -> pytest.MarkDecorator:
    """A mark for a test or module (``pytestmark``) that needs a tool: ``absent`` is None when the tool
    is here, else the reason; tests/conftest.py calls `missing` with it before the test's fixtures."""
    return pytest.mark.needs_tool(absent)

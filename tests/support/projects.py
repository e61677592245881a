"""A copy of the repository's own example project (examples/, the [tool.parity-gate] section and,
when asked, the committed baselines) in a temporary folder: tests that write must never touch the
checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def examples_project(tmp: Path, baselines: bool = False) -> Path:
    """The path of the copied config (``tmp/pyproject.toml``)."""
    if baselines:
        shutil.copytree(ROOT / "baselines", tmp / "baselines")
    shutil.copytree(ROOT / "examples", tmp / "examples")
    text = (ROOT / "pyproject.toml").read_text()
    (tmp / "pyproject.toml").write_text(text[text.index("[tool.parity-gate]"):])
    return tmp / "pyproject.toml"

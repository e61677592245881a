"""A stand-in for the action's virtual environment: `bin/parity-gate` runs tests.support.cli_shim
(or, with ``module="gate.cli"``, the real CLI) with this interpreter and this checkout on PYTHONPATH
(installing parity-gate and torch per test is too slow). The tests hand it to the action as its
`venv-path` input, as a runner with a ready environment would."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make_prepared_venv(where: Path, module: str = "tests.support.cli_shim") -> Path:
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "parity-gate"
    exe.write_text(
        "#!/usr/bin/env bash\n"
        f"export PYTHONPATH={shlex.quote(str(ROOT))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        f"exec {shlex.quote(sys.executable)} -m {module} \"$@\"\n",
        encoding="utf-8",
    )
    exe.chmod(0o755)
    return where

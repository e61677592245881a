"""The baseline files a change rewrites, as text: each file before (at the base revision) and after,
rendered as ``parity-gate show --textconv`` renders them (one line per layer), and diffed. The report
carries these diffs so the pull request's comment shows what moved, without a git diff driver."""

from __future__ import annotations

import difflib
import subprocess
import tempfile
from pathlib import Path

from gate.config import Config
from gate.errors import FormatError
from gate.formats.baseline.show import render_file

MAX_LINES = 80  # per file: the comment keeps its notices whole, so this part stays small
MAX_CHARS = 12_000  # all files together


def baseline_diffs(config: Config, since: str, paths: list[str]) -> dict[str, str]:
    """``{path: unified diff}`` for the changed baseline files ``paths`` (relative to the repository's
    top, as ``baseline_changes`` lists them); a file that cannot be read shows its error as text."""
    top = _top(config.root)
    out: dict[str, str] = {}
    budget = MAX_CHARS
    for path in paths:
        if budget <= 0:
            break
        before = _text_at(top, since, path)
        after = _text(top / path) if (top / path).is_file() else ""
        lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", n=0,
                                          lineterm=""))
        if len(lines) > MAX_LINES:
            lines = lines[:MAX_LINES] + [f"… {len(lines) - MAX_LINES} more lines: git diff {since} -- {path}"]
        text = "\n".join(lines)[:budget]
        out[path] = text
        budget -= len(text)
    return out


def _top(root: Path) -> Path:
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True, timeout=30)
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else root


def _text(path: Path) -> str:
    try:
        return render_file(path)
    except (FormatError, OSError) as exc:
        return f"invalid baseline: {exc}\n"


def _text_at(top: Path, rev: str, path: str) -> str:
    """The file at ``rev`` rendered as text; empty when it did not exist there (a new baseline)."""
    proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=top, capture_output=True, timeout=60)
    if proc.returncode != 0:
        return ""
    with tempfile.TemporaryDirectory() as folder:
        old = Path(folder) / Path(path).name
        old.write_bytes(proc.stdout)
        return _text(old)

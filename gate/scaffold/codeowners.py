"""The CODEOWNERS entry ``init`` writes: what decides the verdict (``.github/``, the config, the
constraints, the baselines) needs a review by ``origin``'s owner; existing lines are kept. ``RECIPE``
is the rest of the protection, which only the repository's settings can hold."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

PATH = ".github/CODEOWNERS"
RECIPE = ("protect the verdict: a branch ruleset on the default branch requiring the status parity-gate, the "
          "workflow .github/workflows/parity-gate.yml from the default branch, and review from code owners; "
          "write access still lets someone post a status from a workflow of their own branch, and an admin "
          "bypass the ruleset (docs/action.md, the check to require)")
_REMOTE = re.compile(r"github\.com[:/]([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/")


def owner(root: Path) -> str:
    """``@owner`` of the ``origin`` remote on GitHub, else a placeholder to replace."""
    try:
        url = subprocess.run(["git", "remote", "get-url", "origin"], cwd=root, capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        url = ""
    found = _REMOTE.search(url)
    return f"@{found[1]}" if found else "@OWNER"


def entry(root: Path, paths: tuple[str, ...]) -> tuple[str, str, str]:
    """(action, text, why) for ``PATH``: ``paths`` (relative to the root; folders end with ``/``) owned by
    ``owner``; ``keep`` where every one already has a line."""
    target = root / PATH
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    listed = {line.split()[0] for line in current.splitlines() if line.strip() and not line.startswith("#")}
    who = owner(root)
    lines = [f"/{p} {who}\n" for p in paths if f"/{p}" not in listed]
    why = RECIPE + ("; replace @OWNER with the user or team that reviews them" if who == "@OWNER" else "")
    if not lines:
        return "keep", "", RECIPE
    text = (("\n" if current and not current.endswith("\n") else "")
            + "# parity-gate: what decides the verdict is reviewed by its owners\n" + "".join(lines))
    return ("append" if current else "create"), text, why

"""The git diff driver that shows baselines as text: ``git diff`` runs ``parity-gate git-diff`` on both
sides, ``git log -p`` and ``git show`` run ``parity-gate show --textconv`` on each. ``.gitattributes``
routes ``*.msgpack.zst`` to it, but git takes a driver's command only from each clone's own config, so
every clone needs ``parity-gate diff-driver`` once (``install``), and ``check`` says so where missing.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from enum import Enum
from pathlib import Path

GITATTRIBUTES_LINE = "*.msgpack.zst diff=parity-gate"
TEXTCONV_KEY = "diff.parity-gate.textconv"
COMMAND_KEY = "diff.parity-gate.command"
INSTALL = "parity-gate diff-driver"  # what a teammate runs once in a fresh clone
_MISSING = "parity-gate is not installed in this shell: pip install parity-gate (or activate its venv) to read baselines"


class DriverState(Enum):
    NOT_GIT = "not a git repository"
    UNUSED = "no .gitattributes line routes baselines to it"
    MISSING = "routed to it, not set in this clone"
    SET = "set"


def textconv_command(executable: str = sys.executable) -> str:
    """The textconv git runs (through sh, the file appended): the parity-gate beside the Python that
    set it when it is still there, else the one on PATH, else a line saying how to install it, so
    ``git diff`` works from any shell. Not cached: a cache would leave refs/notes/textconv behind."""
    return _through_sh('show --textconv "$1"', executable)


def diff_command(executable: str = sys.executable) -> str:
    """The external diff git runs for a changed baseline (git appends the path, then each side's file,
    hash and mode), found as ``textconv_command`` finds parity-gate."""
    return _through_sh('git-diff "$@"', executable)


def _through_sh(args: str, executable: str) -> str:
    here = str(Path(executable).parent / "parity-gate")
    steps = [] if any(c in here for c in "'\"$`\\") else [f'[ -x "{here}" ] && exec "{here}" {args}']
    steps += [f'command -v parity-gate >/dev/null 2>&1 && exec parity-gate {args}', f'echo "{_MISSING}"']
    return "sh -c '" + "; ".join(steps) + "' -"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)


def top_level(root: Path) -> Path | None:
    """The top folder of the git clone around ``root``; None outside one, or without git."""
    try:
        found = _git(root, "rev-parse", "--show-toplevel").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(found).resolve() if found else None


def state(root: Path, sample: str = "baselines/model.msgpack.zst") -> DriverState:
    """Whether ``git diff`` in the clone around ``root`` shows baselines as text (``sample``: a baseline
    path relative to ``root``, whose attributes git is asked for)."""
    try:
        if _git(root, "rev-parse", "--is-inside-work-tree").returncode != 0:
            return DriverState.NOT_GIT
        if not _git(root, "check-attr", "diff", "--", sample).stdout.strip().endswith(": parity-gate"):
            return DriverState.UNUSED
        # The textconv is what turns binary into text; the command (git diff's summary) is set beside it.
        return DriverState.SET if _git(root, "config", "--get", TEXTCONV_KEY).returncode == 0 else DriverState.MISSING
    except (OSError, subprocess.TimeoutExpired):  # no git here: nothing to say about its diffs
        return DriverState.NOT_GIT


def attributes_line(current: str) -> str:
    """What to append to a ``.gitattributes`` holding ``current`` so that it routes baselines to the
    driver ("" when it has the line)."""
    if any(line.split() == GITATTRIBUTES_LINE.split() for line in current.splitlines()):
        return ""
    sep = "\n" if current and not current.endswith("\n") else ""
    return f"{sep}# parity-gate baselines diff as text; each clone runs `{INSTALL}` once\n{GITATTRIBUTES_LINE}\n"


def install(root: Path) -> list[str]:
    """Set the driver in the local config of the clone around ``root``, and route baselines to it in the
    ``.gitattributes`` at the clone's top where nothing does; returns what was done (or why not), one
    line each."""
    if _git(root, "rev-parse", "--is-inside-work-tree").returncode != 0:
        return [f"not a git repository: run `git init`, then `{INSTALL}`"]
    done = []
    for key, command in ((TEXTCONV_KEY, textconv_command()), (COMMAND_KEY, diff_command())):
        subprocess.run(["git", "config", key, command], cwd=root, check=True, capture_output=True)
        done.append(f"git config {key} {shlex.quote(command)}")
    # An earlier init cached conversions under refs/notes/textconv: stop caching, drop what it kept.
    _git(root, "config", "--unset", "diff.parity-gate.cachetextconv")
    _git(root, "update-ref", "-d", "refs/notes/textconv/parity-gate")
    if state(root) == DriverState.UNUSED:
        target = (top_level(root) or root) / ".gitattributes"
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        added = attributes_line(current)
        if added:
            with target.open("a", encoding="utf-8") as f:
                f.write(added)
            done.append(f"{'appended' if current else 'created'} {target.name}: `{GITATTRIBUTES_LINE}` "
                        "(commit it, so every clone routes baselines to the driver)")
    return done

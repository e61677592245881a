"""Where a model's own code failed: the innermost frame of a traceback that is the user's (not
Python's, an installed package's or parity-gate's), as ``models/vision.py:42 in forward``; and the
whole traceback, kept only when ``PARITY_GATE_DEBUG`` is set (``parity-gate --debug``)."""

from __future__ import annotations

import sys
import sysconfig
import traceback
from pathlib import Path

from gate import env

_GATE = Path(__file__).resolve().parents[1]
_SYSTEM = {Path(p).resolve() for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
           | {sys.prefix, sys.base_prefix, sys.exec_prefix}}


def is_user_file(filename: str) -> bool:
    """A file of the user's: not generated (``<string>``, ``<eval_with_key>``), not in parity-gate, not
    in an installed package or the standard library (a venv inside the repository included)."""
    if not filename or filename.startswith("<"):
        return False
    path = Path(filename).resolve()
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return False
    return not any(path.is_relative_to(root) for root in (_GATE, *_SYSTEM))


def _shown(filename: str) -> str:
    path = Path(filename).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def user_frame(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost user frame of ``exc`` (or of what it was raised
    from); None when no frame is the user's."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        frames = [f for f in traceback.extract_tb(at.__traceback__) if is_user_file(f.filename)]
        if frames:
            f = frames[-1]
            return f"{_shown(f.filename)}:{f.lineno} in {f.name}"
        at = at.__cause__ or at.__context__
    return None


def user_site() -> str | None:
    """``file:line in function`` of the innermost frame of the running stack that is the user's."""
    frames = [f for f in traceback.extract_stack() if is_user_file(f.filename)]
    return f"{_shown(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name}" if frames else None


def trace(exc: BaseException) -> str | None:
    return "".join(traceback.format_exception(exc)).rstrip() if env.debug() else None

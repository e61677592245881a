"""Model names and the one place a name becomes a path."""

from __future__ import annotations

import re
from pathlib import Path

from gate.errors import ConfigError

MODEL_NAME_RE = re.compile(r"[a-z0-9._-]+\Z")
MAX_MODEL_NAME = 128
SUFFIX = ".msgpack.zst"


def model_name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid model name, or None when it is."""
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name:
        return "must not be empty"
    if len(name) > MAX_MODEL_NAME:
        return f"is {len(name):,} characters long (limit {MAX_MODEL_NAME})"
    if name in (".", ".."):
        return "must not be '.' or '..'"
    if not MODEL_NAME_RE.match(name):
        return "may only contain lowercase letters, digits, '.', '_' and '-'"
    return None


def check_model_name(name: object) -> str:
    problem = model_name_problem(name)
    if problem is not None:
        shown = ascii(name)[:80] if isinstance(name, str) else type(name).__name__
        raise ConfigError(f"model name {shown} {problem}")
    return name  # type: ignore[return-value]


def baseline_path(baseline_dir: Path, model: str) -> Path:
    """``<baseline_dir>/<model>.msgpack.zst``; ConfigError unless ``model`` is a valid name.

    A valid name has no separator and is not '.' or '..', so the result is always a direct
    child of ``baseline_dir``.
    """
    check_model_name(model)
    path = Path(baseline_dir) / f"{model}{SUFFIX}"
    # Belt and braces: the name rules above already guarantee this.
    if path.parent != Path(baseline_dir) or path.name != f"{model}{SUFFIX}":
        raise ConfigError(f"model name {ascii(model)} does not name a file inside {baseline_dir}")
    return path

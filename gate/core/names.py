"""The model-name rule: models name files (``baselines/<model>.msgpack.zst``), so a name is
1-128 of ``a-z 0-9 . _ -``, and not ``.`` or ``..``."""

from __future__ import annotations

import re

from gate.errors import ConfigError

MODEL_NAME_RE = re.compile(r"[a-z0-9._-]+\Z")  # \Z, not $: "$" lets a trailing newline through
MAX_MODEL_NAME = 128


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

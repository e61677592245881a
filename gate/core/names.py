"""The name rules: models name files (``baselines/<model>.msgpack.zst``), so a model's name is 1-128 of
``a-z 0-9 . _ -``, and not ``.`` or ``..``; a layer, module or tensor name is one line a file can hold
(``bad_name``: the model's own names and every reader's)."""

from __future__ import annotations

import re
import unicodedata

from gate.errors import ConfigError

MODEL_NAME_RE = re.compile(r"[a-z0-9._-]+\Z")  # \Z, not $: "$" lets a trailing newline through
MAX_MODEL_NAME = 128
MAX_NAME = 1_024  # a layer, module, tensor, type or provider name: what the files hold (``Limits``)


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


# Control, format (bidi, zero-width), surrogate and line/paragraph-separator characters: none belongs in a
# model, layer, provider or check name, and each could break a log line or hide what a name says.
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def bad_name(name: object) -> str | None:
    """Why ``name`` (a model's layer, module or tensor name, or one a report or result file holds) is
    refused; None when it is not: one rule for the model's names and for every reader of names."""
    if not isinstance(name, str):
        return None
    if len(name) > MAX_NAME:  # over it, no baseline or result can be written
        return f"name {quote(name)} is {len(name):,} characters long (the limit is {MAX_NAME:,})"
    ch = next((ch for ch in name if unicodedata.category(ch) in _NOT_IN_NAMES), None)
    return None if ch is None else f"name {quote(name)} holds the control character {ascii(ch)}"


def quote(name: str, limit: int = 80) -> str:
    """A name from a file, quoted for a message: ASCII, one line, bounded."""
    s = ascii(name)
    return s if len(s) <= limit else s[: limit - 4] + "...'"

"""Typed access to one TOML table that remembers where it is, so every error names the file and
the dotted key (``tool.parity-gate.models[0].inputs[0].shape``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.errors import ConfigError


class Reader:
    """Typed access to one TOML table that remembers where it is, for messages."""

    def __init__(self, table: Any, path: Path, where: str):
        self.path, self.where = path, where
        if not isinstance(table, dict):
            self.fail(where, f"expected a table, got {kind(table)}")
        self.table = table

    def fail(self, key: str, message: str) -> None:
        raise ConfigError(f"{self.path}: `{key}`: {message}")

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        for name in self.table:
            if name not in allowed:
                self.fail(self.key(name), f"unknown key (allowed: {', '.join(allowed)})")

    def get(self, name: str, kinds: tuple[type, ...], default: Any = None, required: bool = False) -> Any:
        if name not in self.table:
            if required:
                self.fail(self.key(name), "required key is missing")
            return default
        value = self.table[name]
        if isinstance(value, bool) and bool not in kinds:
            self.fail(self.key(name), f"expected {names(kinds)}, got a boolean")
        if not isinstance(value, kinds):
            self.fail(self.key(name), f"expected {names(kinds)}, got {kind(value)}")
        return value


def kind(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", int: "an integer", float: "a float",
            bool: "a boolean"}.get(type(value), type(value).__name__)


def names(kinds: tuple[type, ...]) -> str:
    return " or ".join(kind(k()) if k is not type(None) else "nothing" for k in kinds)

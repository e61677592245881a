"""Typed access to one TOML table that remembers where it is, so every error names the file and the
dotted key (``tool.parity-gate.models[1].inputs[1].shape``). Array positions count from 1, as a person
counts ``[[models]]`` tables; a table of a named model also names it once the name is read.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any, NoReturn

from gate.errors import ConfigError


class Files:
    """Where a config and the files it names are read: this disk, or another commit's tree (the base of
    ``check --changed-since``, gate.commands.loosened), through the same loader."""

    def read_text(self, path: Path) -> str:
        return path.read_text(encoding="utf-8")

    def is_file(self, path: Path) -> bool:
        return path.is_file()

    def glob(self, pattern: str) -> list[str]:
        return sorted(glob.glob(pattern))

    def resolve(self, path: Path) -> Path:
        """``path`` with its symlinks followed (in the tree read: a link may point elsewhere there)."""
        return path.resolve()


DISK = Files()


class Reader:
    def __init__(self, table: Any, path: Path, where: str, owner: str | None = None, files: Files = DISK):
        self.path, self.where, self.owner, self.files = path, where, owner, files
        if not isinstance(table, dict):
            self.fail(where, f"expected a table, got {kind(table)}")
        self.table = table

    def fail(self, key: str, message: str) -> NoReturn:
        raise ConfigError(f"{self.path}: {f'{self.owner}: ' if self.owner else ''}`{key}`: {message}")

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def item(self, name: str, index: int) -> str:
        """The key of element ``index`` (zero-based) of this table's array ``name``, as messages write
        it (counted from 1)."""
        return f"{self.key(name)}[{index + 1}]"

    def child(self, table: Any, where: str) -> Reader:
        """A table inside this one (it names the same model)."""
        return Reader(table, self.path, where, self.owner, self.files)

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

    def at_least(self, name: str, kinds: tuple[type, ...], low: int, default: Any = None) -> Any:
        value = self.get(name, kinds, default)
        if value is not None and not value >= low:  # NaN too
            self.fail(self.key(name), f"must be >= {low}, got {value}")
        return value

    def seed(self, default: int) -> int:
        """``seed``: what torch and NumPy accept as a seed, sweep sets added (0 <= seed < 2**62)."""
        value: int = self.at_least("seed", (int,), 0, default)
        if value >= 2**62:
            self.fail(self.key("seed"), f"must be < 2**62, got {value}")
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str | None = None) -> Any:
        value = self.get(name, (str,), default)
        if value is not None and value not in choices:
            self.fail(self.key(name), f"expected one of {', '.join(choices)}, got `{value}`")
        return value


def kind(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", int: "an integer", float: "a float",
            bool: "a boolean"}.get(type(value), type(value).__name__)


def names(kinds: tuple[type, ...]) -> str:
    return " or ".join(kind(k()) if k is not type(None) else "nothing" for k in kinds)

"""Checked access to one object of an untrusted JSON document: ``Obj`` wraps a parsed object and its
path, so every wrong field is one ``FormatError`` line naming the file and the key. Unknown keys are
ignored: newer writers may add fields.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from gate.core.status import Word
from gate.errors import FormatError

T = TypeVar("T")
W = TypeVar("W", bound=Word)
_MISSING: Any = object()


def kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    names: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)


class Obj:
    # The methods ``str``, ``int`` and ``bool`` shadow the builtins in this class's annotations: they
    # name ``builtins.*`` there.
    def __init__(self, data: object, source: builtins.str, path: builtins.str = ""):
        self.source, self.path = source, path
        if not isinstance(data, dict):
            raise FormatError(f"{source}: `{path or '(top level)'}`: expected an object, got {kind(data)}")
        self.data: dict[builtins.str, Any] = data

    def _key(self, key: builtins.str) -> builtins.str:
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: builtins.str, message: builtins.str) -> NoReturn:
        raise FormatError(f"{self.source}: `{self._key(key)}`: {message}")

    def has(self, key: builtins.str) -> builtins.bool:
        return self.data.get(key) is not None

    def _missing(self, key: builtins.str, default: Any, what: builtins.str) -> Any:
        if default is _MISSING:
            self.fail(key, f"expected {what}, got {'null' if key in self.data else 'nothing (missing)'}")
        return default

    def str(self, key: builtins.str, default: Any = _MISSING) -> builtins.str:
        value = self.data.get(key)
        if value is None:
            missing: builtins.str = self._missing(key, default, "a string")  # the default, or it failed
            return missing
        if not isinstance(value, str):
            self.fail(key, f"expected a string, got {kind(value)}")
        return value

    def opt_str(self, key: builtins.str) -> builtins.str | None:
        return self.str(key, None)

    def expect(self, key: builtins.str, wanted: builtins.str) -> None:
        if self.data.get(key) != wanted:
            self.fail(key, f"is {self.data.get(key)!r}, expected {wanted!r}")

    def choice(self, key: builtins.str, choices: tuple[builtins.str, ...], default: Any = _MISSING) -> builtins.str:
        value = self.str(key, default)
        if value not in choices:
            self.fail(key, f"{value[:40]!r} is not one of {', '.join(choices)}")
        return value

    def word(self, key: builtins.str, vocabulary: type[W], default: Any = _MISSING) -> W:
        """One word of ``vocabulary`` (a ``gate.core.status`` enum), as its member."""
        value = self.choice(key, vocabulary.values(), default)
        return value if value is None else vocabulary(value)

    def opt_word(self, key: builtins.str, vocabulary: type[W]) -> W | None:
        return self.word(key, vocabulary, None) if self.has(key) else None

    def num(self, key: builtins.str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"expected a number or null, got {kind(value)}")
        if not math.isfinite(value):
            self.fail(key, "expected a finite number or null")
        return float(value) if isinstance(value, float) else value

    def int(self, key: builtins.str) -> builtins.int | None:
        value = self.num(key)
        if value is not None and not isinstance(value, int):
            self.fail(key, f"expected an integer, got {value!r}")
        return value

    def bool(self, key: builtins.str) -> builtins.bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {kind(value)}")
        return value

    def _array(self, key: builtins.str, required: builtins.bool) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "expected an array, got nothing")
            return []
        if not isinstance(value, list):
            self.fail(key, f"expected an array, got {kind(value)}")
        return value

    def strs(self, key: builtins.str) -> list[builtins.str]:
        items = self._array(key, False)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                self.fail(f"{key}[{i}]", f"expected a string, got {kind(item)}")
        return items

    def word_list(self, key: builtins.str, vocabulary: type[W]) -> list[W]:
        """An array of words of ``vocabulary``, as its members (missing: empty)."""
        words = self.strs(key)
        for w in words:
            if w not in vocabulary.values():
                self.fail(key, f"{w[:40]!r} is not one of {', '.join(vocabulary.values())}")
        return [vocabulary(w) for w in words]

    def objs(self, key: builtins.str, read: Callable[[Obj], T], required: builtins.bool = False) -> list[T]:
        return [read(Obj(item, self.source, f"{self._key(key)}[{i}]"))
                for i, item in enumerate(self._array(key, required))]

    def opt_obj(self, key: builtins.str, read: Callable[[Obj], T]) -> T | None:
        value = self.data.get(key)
        return None if value is None else read(Obj(value, self.source, self._key(key)))

    def counts(self, key: builtins.str) -> dict[builtins.str, builtins.int]:
        """An object of non-negative integers by name (missing: empty)."""
        value = self.free(key) or {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                self.fail(f"{key}.{k[:40]}", f"expected a count, got {kind(v)}")
        return value

    def words(self, key: builtins.str) -> dict[builtins.str, builtins.str]:
        """An object of strings by name (missing: empty)."""
        value = self.free(key) or {}
        for k, v in value.items():
            if not isinstance(v, str):
                self.fail(f"{key}.{k[:40]}", f"expected a string, got {kind(v)}")
        return value

    def free(self, key: builtins.str) -> dict[builtins.str, Any] | None:
        """A free-form object (evidence, placement), passed on as parsed."""
        value = self.data.get(key)
        if value is not None and not isinstance(value, dict):
            self.fail(key, f"expected an object or null, got {kind(value)}")
        return value

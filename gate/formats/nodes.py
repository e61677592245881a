"""Schema building blocks, each walked two ways: ``read`` from an untrusted msgpack stream (type byte and
length checked first, unknown keys rejected before their values are read), and ``conform`` a Python
document to its canonical copy for the writer.
"""

from __future__ import annotations

import math
import numbers
import re
import struct
from collections.abc import Mapping
from typing import Any

from gate.core.names import quote

from .limits import Limits
from .stream import Invalid, StreamReader

I64_MAX = 2**63 - 1
U64_MAX = 2**64 - 1
# the one NaN a writer emits (0x7ff8000000000000), whatever payload or sign the caller had
CANONICAL_NAN: float = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _limit(limits: Limits, bound: int | str) -> int:
    return getattr(limits, bound) if isinstance(bound, str) else bound


class Node:
    def read(self, r: StreamReader, path: str, limits: Limits) -> object:
        raise NotImplementedError

    def conform(self, v: object, path: str, limits: Limits) -> object:
        raise NotImplementedError


def _str(r: StreamReader, path: str) -> str:
    """The string the header just checked announces."""
    v = r.take(path)
    assert isinstance(v, str)
    return v


def _expect(r: StreamReader, path: str, want: str, what: str) -> int:
    kind, length = r.peek(path)
    if kind != want:
        raise Invalid(path, f"expected {what}, got {kind}")
    return length


class Int(Node):
    def __init__(self, lo: int, hi: int | str) -> None:
        self.lo, self.hi = lo, hi

    def check(self, v: int, path: str, limits: Limits) -> int:
        hi = _limit(limits, self.hi)
        if v < self.lo:
            raise Invalid(path, f"{v:,} is below the minimum {self.lo:,}")
        if v > hi:
            word = "limit" if isinstance(self.hi, str) else "maximum"
            raise Invalid(path, f"{v:,} exceeds the {word} {hi:,}")
        return v

    def read(self, r: StreamReader, path: str, limits: Limits) -> int:
        b = r.byte()
        if not (0 <= b <= 0x7F or b >= 0xE0 or 0xCC <= b <= 0xD3):  # fixints, uint8..64, int8..64
            _expect(r, path, "integer", "an integer")
        v = r.take(path)
        assert isinstance(v, int)  # the header said an integer
        return self.check(v, path, limits)

    def conform(self, v: object, path: str, limits: Limits) -> int:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise Invalid(path, f"expected an integer, got {type(v).__name__}")
        return self.check(int(v), path, limits)


class Float(Node):
    """A float64; NaN only where the contract allows it."""

    def __init__(self, nan: bool = True, lo: float = -math.inf, hi: float = math.inf) -> None:
        self.nan, self.lo, self.hi = nan, lo, hi

    def check(self, v: float, path: str) -> float:
        if v != v:
            if not self.nan:
                raise Invalid(path, "NaN is not allowed here")
            return CANONICAL_NAN
        if not self.lo <= v <= self.hi:
            raise Invalid(path, f"{v!r} is outside [{self.lo!r}, {self.hi!r}]")
        return v

    def read(self, r: StreamReader, path: str, limits: Limits) -> float:
        if r.byte() != 0xCB:
            kind, _ = r.peek(path)
            raise Invalid(path, f"expected a float64, got {kind}")
        v = r.take(path)
        assert isinstance(v, float)  # the header said a float64
        return self.check(v, path)

    def conform(self, v: object, path: str, limits: Limits) -> float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise Invalid(path, f"expected a float, got {type(v).__name__}")
        try:
            f = float(v)
        except OverflowError:
            raise Invalid(path, f"{v!r} does not fit a float64") from None
        return self.check(f, path)


class Str(Node):
    def __init__(
        self,
        max_len: int | str,
        *,
        pattern: re.Pattern[str] | None = None,
        choices: tuple[str, ...] | None = None,
        rule: str = "",
        min_len: int = 1,
    ) -> None:
        self.max_len, self.pattern, self.choices = max_len, pattern, choices
        self.rule, self.min_len = rule, min_len
        self._longest_choice = max(map(len, choices)) if choices else 0

    def check(self, v: str, path: str, limits: Limits) -> str:
        if self.choices is not None:
            if v not in self.choices:
                allowed = ", ".join(repr(c) for c in self.choices)
                raise Invalid(path, f"{quote(v)} is not one of {allowed}")
            return v
        n = _limit(limits, self.max_len)
        if len(v) > n:
            raise Invalid(path, f"string of {len(v):,} characters exceeds the limit {n:,}")
        if len(v) < self.min_len:
            raise Invalid(path, "must not be empty")
        if self.pattern is not None and not self.pattern.match(v):
            raise Invalid(path, f"{quote(v)} {self.rule}")
        return v

    def read(self, r: StreamReader, path: str, limits: Limits) -> str:
        n = self._longest_choice if self.choices else _limit(limits, self.max_len)
        b = r.byte()
        if 0xA0 <= b <= 0xBF and (b & 0x1F) <= 4 * n:  # short string: the common case
            return self.check(_str(r, path), path, limits)
        nbytes = _expect(r, path, "string", "a string")
        if self.choices and nbytes > 4 * n:
            raise Invalid(path,
                          f"string of {nbytes:,} bytes is not one of {', '.join(map(repr, self.choices))}")
        if nbytes > 4 * n:  # UTF-8 takes at most 4 bytes a character
            raise Invalid(path, f"string of {nbytes:,} bytes exceeds the limit {n:,} characters")
        return self.check(_str(r, path), path, limits)

    def conform(self, v: object, path: str, limits: Limits) -> str:
        if not isinstance(v, str):
            raise Invalid(path, f"expected a string, got {type(v).__name__}")
        v = str(v)  # a plain str: the packer is strict, and a status word is written as its value
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise Invalid(path, f"{quote(v)} is not valid Unicode (lone surrogate)") from None
        return self.check(v, path, limits)


class Bool(Node):
    def read(self, r: StreamReader, path: str, limits: Limits) -> bool:
        _expect(r, path, "boolean", "true or false")
        v = r.take(path)
        assert isinstance(v, bool)  # the header said a boolean
        return v

    def conform(self, v: object, path: str, limits: Limits) -> bool:
        if not isinstance(v, bool):
            raise Invalid(path, f"expected true or false, got {type(v).__name__}")
        return v


class Nullable(Node):
    def __init__(self, inner: Node) -> None:
        self.inner = inner

    def read(self, r: StreamReader, path: str, limits: Limits) -> object:
        if r.peek(path)[0] == "nil":
            r.take(path)
            return None
        return self.inner.read(r, path, limits)

    def conform(self, v: object, path: str, limits: Limits) -> object:
        return None if v is None else self.inner.conform(v, path, limits)


class _Sized(Node):
    """A container whose declared length is checked against a limit before it is read."""

    max_len: int | str
    what: str = "entries"

    def _count(self, n: int, path: str, limits: Limits) -> None:
        hi = _limit(limits, self.max_len)
        if n > hi:
            raise Invalid(path, f"{n:,} {self.what} exceed the limit {hi:,}")


class Bin(_Sized):
    what = "bytes"

    def __init__(self, max_len: int | str) -> None:
        self.max_len = max_len

    def read(self, r: StreamReader, path: str, limits: Limits) -> bytes:
        self._count(_expect(r, path, "binary", "binary data"), path, limits)
        v = r.take(path)
        assert isinstance(v, bytes)  # the header said binary data
        return v

    def conform(self, v: object, path: str, limits: Limits) -> bytes:
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise Invalid(path, f"expected bytes, got {type(v).__name__}")
        v = bytes(v)
        self._count(len(v), path, limits)
        return v


class Array(_Sized):
    def __init__(self, item: Node, max_len: int | str) -> None:
        self.item, self.max_len = item, max_len

    def read(self, r: StreamReader, path: str, limits: Limits) -> list[object]:
        self._count(_expect(r, path, "array", "an array"), path, limits)
        n = r.array_header(path)
        return [self.item.read(r, f"{path}[{i}]", limits) for i in range(n)]

    def conform(self, v: object, path: str, limits: Limits) -> list[object]:
        if not isinstance(v, (list, tuple)):
            raise Invalid(path, f"expected a list, got {type(v).__name__}")
        self._count(len(v), path, limits)
        return [self.item.conform(x, f"{path}[{i}]", limits) for i, x in enumerate(v)]


class Record(Node):
    """A map with fixed keys: unknown, duplicate and missing keys are errors."""

    def __init__(self, fields: list[tuple[str, Node]], optional: tuple[str, ...] = ()) -> None:
        self.fields = dict(fields)
        self.optional = frozenset(optional)

    def _missing(self, got: Mapping[str, Any], path: str) -> None:
        for k in self.fields:
            if k not in got and k not in self.optional:
                raise Invalid(path, f"missing key {k!r}")

    def read(self, r: StreamReader, path: str, limits: Limits) -> dict[str, Any]:
        _expect(r, path, "map", "a map")
        n = r.map_header(path)
        got: dict[str, object] = {}
        fields = self.fields
        for _ in range(n):
            if not 0xA0 <= r.byte() <= 0xBF:  # not a short string: check before reading
                kind, nbytes = r.peek(path)
                if kind != "string":
                    raise Invalid(path, f"map key is {kind}, expected a string")
                if nbytes > 256:
                    raise Invalid(path, f"unknown key of {nbytes:,} bytes")
            k = _str(r, path)
            node = fields.get(k)
            if node is None:
                raise Invalid(path, f"unknown key {quote(k)}")
            if k in got:
                raise Invalid(path, f"duplicate key {quote(k)}")
            got[k] = node.read(r, _key(path, k), limits)
        self._missing(got, path)
        return {k: got[k] for k in self.fields if k in got}

    def conform(self, v: object, path: str, limits: Limits) -> dict[str, Any]:
        if not isinstance(v, Mapping):
            raise Invalid(path, f"expected a map, got {type(v).__name__}")
        for k in v:
            if k not in self.fields:
                raise Invalid(path, f"unknown key {quote(k) if isinstance(k, str) else repr(k)}")
        self._missing(v, path)
        return {k: node.conform(v[k], _key(path, k), limits) for k, node in self.fields.items() if k in v}


class NameMap(_Sized):
    """A map from names to one kind of value; the writer sorts it by name."""

    def __init__(self, key: Str, value: Node, max_len: int | str, what: str) -> None:
        self.key, self.value, self.max_len, self.what = key, value, max_len, what

    def read(self, r: StreamReader, path: str, limits: Limits) -> dict[str, object]:
        self._count(_expect(r, path, "map", "a map"), path, limits)
        n = r.map_header(path)
        got: dict[str, object] = {}
        for _ in range(n):
            k = self.key.read(r, f"{path} key", limits)
            if k in got:
                raise Invalid(path, f"duplicate key {quote(k)}")
            got[k] = self.value.read(r, f"{path}[{quote(k)}]", limits)
        return got

    def conform(self, v: object, path: str, limits: Limits) -> dict[str, object]:
        if not isinstance(v, Mapping):
            raise Invalid(path, f"expected a map, got {type(v).__name__}")
        self._count(len(v), path, limits)
        out: dict[str, object] = {}
        for k in v:
            self.key.conform(k, f"{path} key", limits)
        for k in sorted(v):
            out[k] = self.value.conform(v[k], f"{path}[{quote(k)}]", limits)
        return out

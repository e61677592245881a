"""A msgpack reader that rejects a wrong type or an oversized length from a value's header bytes, so a
hostile file never makes us build a structure the schema would throw away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from gate.errors import FormatError, LfsPointer, NewerFormat, StaleFormat

from .limits import Limits


class Invalid(Exception):
    """One broken rule at one place in the document (internal; becomes a FormatError)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class Newer(Invalid):
    """The document is of a newer format than this parity-gate reads (becomes a NewerFormat)."""


class Stale(Invalid):
    """The document is of a format this parity-gate no longer reads (becomes a StaleFormat)."""


class Pointer(Invalid):
    """The file is a Git LFS pointer (becomes an LfsPointer)."""


def error_class(e: Invalid) -> type[FormatError]:
    """The FormatError an Invalid becomes: its kind decides the fix (upgrade, re-record, fetch, restore)."""
    kinds: tuple[tuple[type[Invalid], type[FormatError]], ...] = (
        (Newer, NewerFormat), (Stale, StaleFormat), (Pointer, LfsPointer))
    return next((error for kind, error in kinds if isinstance(e, kind)), FormatError)


def one_line(text: object, limit: int = 200) -> str:
    """``text`` as a single printable line (file content must not forge output lines)."""
    s = " ".join(str(text).split())
    s = s.encode("ascii", "backslashreplace").decode("ascii")
    return s if len(s) <= limit else s[: limit - 3] + "..."


# kind, and how many big-endian length bytes follow the type byte (None: no length)
_FIXED = {
    0xC0: ("nil", None),
    0xC1: ("invalid byte 0xc1", None),
    **dict.fromkeys((0xC2, 0xC3), ("boolean", None)),
    0xC4: ("binary", 1),
    0xC5: ("binary", 2),
    0xC6: ("binary", 4),
    **dict.fromkeys((0xC7, 0xC8, 0xC9, *range(0xD4, 0xD9)), ("extension", None)),
    0xCA: ("float32", None),
    0xCB: ("float64", None),
    **dict.fromkeys(range(0xCC, 0xD4), ("integer", None)),
    0xD9: ("string", 1),
    0xDA: ("string", 2),
    0xDB: ("string", 4),
    0xDC: ("array", 2),
    0xDD: ("array", 4),
    0xDE: ("map", 2),
    0xDF: ("map", 4),
}
_MSGPACK_ERRORS = (msgpack.UnpackException, ValueError)  # includes UnicodeDecodeError, ExtraData


class StreamReader:
    def __init__(self, raw: bytes, limits: Limits) -> None:
        self.raw = raw
        self.end = len(raw)
        # The reader's own caps are a second fence behind the header checks below.
        longest_str = 4 * max(limits.max_name_length, limits.max_text_length, 256)
        self._up = msgpack.Unpacker(
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_buffer_size=max(self.end, 1),
            max_str_len=longest_str,
            max_bin_len=limits.max_sketch_bytes,
            max_array_len=max(limits.max_layers, limits.max_rank, limits.max_quantiles),
            max_map_len=max(limits.max_layers, limits.max_providers, limits.max_device_classes, 64),
            max_ext_len=0,
        )
        self._up.feed(raw)

    @property
    def pos(self) -> int:
        return self._up.tell()

    def _truncated(self, path: str) -> Invalid:
        return Invalid(path, f"msgpack data ends early (at byte {self.end:,})")

    def byte(self) -> int:
        """The next type byte, or -1 at the end (the fast paths' first look)."""
        pos = self._up.tell()
        return self.raw[pos] if pos < self.end else -1

    def peek(self, path: str) -> tuple[str, int]:
        """Kind of the next value and its declared length (0 for scalars), consuming nothing."""
        pos = self._up.tell()
        if pos >= self.end:
            raise self._truncated(path)
        b = self.raw[pos]
        if b <= 0x7F or b >= 0xE0:
            return "integer", 0
        if b <= 0x8F:
            return "map", b & 0x0F
        if b <= 0x9F:
            return "array", b & 0x0F
        if b <= 0xBF:
            return "string", b & 0x1F
        kind, size = _FIXED[b]
        if b == 0xC1:
            raise Invalid(path, f"invalid msgpack byte 0xc1 at byte {pos:,}")
        if size is None:
            return kind, 0
        if pos + 1 + size > self.end:
            raise self._truncated(path)
        length = int.from_bytes(self.raw[pos + 1 : pos + 1 + size], "big")
        left = self.end - pos - 1 - size
        # every element takes at least one byte (a map entry two): a cheap early stop
        # for headers that declare billions of entries
        if kind in ("map", "array") and length * (2 if kind == "map" else 1) > left:
            raise Invalid(path, f"{kind} declares {length:,} entries but only {left:,} bytes follow")
        if kind not in ("map", "array") and length > left:
            raise Invalid(path, f"{kind} declares {length:,} bytes but only {left:,} follow")
        return kind, length

    def _read(self, path: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except msgpack.OutOfData:
            raise self._truncated(path) from None
        except msgpack.StackError:
            raise Invalid(path, f"msgpack nesting too deep at byte {self.pos:,}") from None
        except _MSGPACK_ERRORS as e:
            detail = one_line(e) or type(e).__name__
            raise Invalid(path, f"malformed msgpack at byte {self.pos:,} ({detail})") from None

    def take(self, path: str) -> object:
        return self._read(path, self._up.unpack)

    def map_header(self, path: str) -> int:
        return self._read(path, self._up.read_map_header)

    def array_header(self, path: str) -> int:
        return self._read(path, self._up.read_array_header)

    def skip(self, path: str) -> None:
        self._read(path, self._up.skip)

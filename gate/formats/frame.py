"""What baseline and result files share: one zstd frame that records its content size, holding one msgpack
map whose first keys say its format and version. Every size is checked before the memory is spent; each
failure is an ``Invalid`` naming the broken rule (the codecs make it one FormatError line).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from gate.core.names import quote
from gate.errors import FormatError

from .limits import Limits
from .nodes import Record
from .stream import Invalid, Newer, Pointer, Stale, StreamReader, one_line

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_MAX_WINDOW = 1 << 27  # zstd's own default cap, made explicit
UPGRADE = "upgrade with `pip install -U parity-gate`"


@dataclass(frozen=True)
class FileKind:
    noun: str  # "baseline", "result file": how messages name the file
    format: str
    version: int  # the version this parity-gate writes
    recreate: str  # what to run to write a file of the current version
    oldest: int = 0  # the oldest version it reads (0: only ``version``); docs/formats.md#versions

    @property
    def reads(self) -> range:
        return range(self.oldest or self.version, self.version + 1)


def unframe(data: bytes, limits: Limits, kind: FileKind) -> bytes:
    """The content of the one zstd frame ``data`` must be; Invalid names the broken rule."""
    if len(data) > limits.max_file_size:
        raise Invalid("", f"file is {len(data):,} bytes (limit {limits.max_file_size:,})")
    if not data:
        raise Invalid("", "file is empty")
    if data[:4] != ZSTD_MAGIC:
        if data.startswith(b"version https://git-lfs"):
            raise Pointer("", f"is a Git LFS pointer, not the {kind.noun}; run `git lfs pull`")
        if 0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF):
            raise Stale("", "is raw msgpack, not a zstd frame; " + kind.recreate)
        raise Invalid("", f"not a zstd frame (starts with {data[:4].hex(' ')})")
    try:
        params = zstandard.get_frame_parameters(data)
    except zstandard.ZstdError as e:
        raise Invalid("", f"bad zstd frame header ({one_line(e)})") from None
    size = params.content_size
    if size == zstandard.CONTENTSIZE_UNKNOWN:
        raise Invalid("", "zstd frame does not record its content size")
    if size == zstandard.CONTENTSIZE_ERROR:
        raise Invalid("", "bad zstd frame header (content size)")
    if size > limits.max_decompressed_size:
        raise Invalid("", f"zstd frame declares {size:,} bytes (limit {limits.max_decompressed_size:,})")
    if params.dict_id:
        raise Invalid("", f"zstd frame needs dictionary {params.dict_id} ({kind.noun}s use none)")
    if size == 0:
        raise Invalid("", "zstd frame is empty (0 bytes of content)")
    try:
        out = zstandard.ZstdDecompressor(max_window_size=_MAX_WINDOW).decompress(
            data, max_output_size=size, allow_extra_data=False
        )
    except zstandard.ZstdError as e:
        msg = one_line(e)
        if "unused data" in msg:
            raise Invalid("", f"trailing data after the zstd frame ({msg})") from None
        if "did not decompress full frame" in msg:
            raise Invalid("", f"truncated zstd frame (declares {size:,} bytes of content)") from None
        raise Invalid("", f"corrupt zstd frame ({msg})") from None
    if len(out) != size:  # zstd checks this; keep the promise independent of it
        raise Invalid("", f"zstd frame holds {len(out):,} bytes, its header declares {size:,}")
    return out


def parse(data: bytes, limits: Limits, kind: FileKind, schema: Record) -> dict[str, Any]:
    """The document in a file's bytes: unframed, its version checked, read by ``schema`` to its end."""
    raw = unframe(data, limits, kind)
    check_version(raw, limits, kind)
    r = StreamReader(raw, limits)
    doc = schema.read(r, "", limits)
    if r.pos != len(raw):
        raise Invalid("", f"trailing data after the msgpack map ({len(raw) - r.pos:,} more bytes)")
    return doc


def check_version(raw: bytes, limits: Limits, kind: FileKind) -> None:
    """First pass: find "format" and "version" wherever they are, skipping everything else,
    so a file from another version gets the upgrade message rather than a schema error."""
    r = StreamReader(raw, limits)
    top, _ = r.peek("")
    if top != "map":
        raise Invalid("", f"top level is {top}, expected a map")
    found: dict[str, object] = {}
    for _ in range(r.map_header("")):
        if len(found) == 2:  # writers put both first; the full parse checks the rest
            break
        key_type, nbytes = r.peek("")
        if key_type != "string":
            raise Invalid("", f"map key is {key_type}, expected a string")
        if nbytes <= 64:
            key = r.take("")
        else:  # longer than any key we look for
            key = None
            r.skip("")
        if key in ("format", "version") and key not in found:
            vkind, vlen = r.peek(key)
            if (vkind == "string" and vlen <= 256) or vkind == "integer":
                found[key] = r.take(key)
                continue
            found[key] = f"<{vkind}>"
        r.peek(key or "")  # declared sizes checked even for values we skip
        r.skip(key or "")
    fmt = found.get("format")
    if fmt is None:
        raise Invalid("", f"missing key 'format' (not a parity-gate {kind.noun})")
    if fmt != kind.format:
        raise Invalid("format", f"not a parity-gate {kind.noun} (format {quote(str(fmt))})")
    version = found.get("version")
    if version is None:
        raise Invalid("", "missing key 'version'")
    if not isinstance(version, int):
        got = f"string {quote(version)}" if isinstance(version, str) else str(version)
        raise Invalid("version", f"expected an integer, got {got}")
    if version > kind.version:
        raise Newer("", f"written by a newer parity-gate (format version {version:,}); {UPGRADE}")
    if version not in kind.reads:
        raise Stale("", f"format version {version:,} is no longer supported; {kind.recreate}")


def read_bytes(path: Path, cap: int, kind: FileKind) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes (never a link, never more read).
    FileNotFoundError passes through; anything else is one FormatError naming the file."""
    source = str(path)
    flags = (os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FormatError(
                f"{kind.noun} `{source}`: is a symbolic link ({kind.noun}s must be regular files)"
            ) from None
        raise FormatError(f"{kind.noun} `{source}`: cannot open ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{kind.noun} `{source}`: not a regular file")
        if st.st_size > cap:
            raise FormatError(f"{kind.noun} `{source}`: file is {st.st_size:,} bytes (limit {cap:,})")
        chunks, got = [], 0
        while got <= cap:  # the file may grow after fstat: never read past cap + 1
            chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as e:
        raise FormatError(f"{kind.noun} `{source}`: cannot read ({e.strerror})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)

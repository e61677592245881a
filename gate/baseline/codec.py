"""Baseline files: one zstd frame (content size recorded) holding one msgpack map.

Reading distrusts the bytes: size caps are checked before each allocation (file, frame,
msgpack headers), trailing data is rejected, and every failure is one FormatError line
naming the file and the rule. Writing is deterministic: canonical key order, float64,
zstd level 10 with content size and checksum.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import msgpack
import zstandard

from gate.errors import FormatError

from .atomic import atomic_write_bytes, baseline_lock, remove_stale_temps
from .limits import DEFAULT_LIMITS, Limits
from .schema import DOCUMENT, FORMAT, VERSION, check_document
from .stream import Invalid, StreamReader, one_line, quote

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_LEVEL = 10
_MAX_WINDOW = 1 << 27  # zstd's own default cap, made explicit
_UPGRADE = "upgrade with `pip install -U parity-gate`"
_RECREATE = "re-create it with `parity-gate update-baseline`"


def _decompress(data: bytes, limits: Limits) -> bytes:
    if len(data) > limits.max_file_size:
        raise Invalid("", f"file is {len(data):,} bytes (limit {limits.max_file_size:,})")
    if not data:
        raise Invalid("", "file is empty")
    if data[:4] != ZSTD_MAGIC:
        if data.startswith(b"version https://git-lfs"):
            raise Invalid("", "is a Git LFS pointer, not the baseline; run `git lfs pull`")
        if 0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF):
            raise Invalid("", "is raw msgpack, not a zstd frame; " + _RECREATE)
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
        raise Invalid("", f"zstd frame needs dictionary {params.dict_id} (baselines use none)")
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


def _check_version(raw: bytes, limits: Limits) -> None:
    """First pass: find "format" and "version" wherever they are, skipping everything else,
    so a file from another version gets the upgrade message rather than a schema error."""
    r = StreamReader(raw, limits)
    kind, _ = r.peek("")
    if kind != "map":
        raise Invalid("", f"top level is {kind}, expected a map")
    found: dict[str, object] = {}
    for _ in range(r.map_header("")):
        if len(found) == 2:  # writers put both first; the full parse checks the rest
            break
        kind, nbytes = r.peek("")
        if kind != "string":
            raise Invalid("", f"map key is {kind}, expected a string")
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
        raise Invalid("", "missing key 'format' (not a parity-gate baseline)")
    if fmt != FORMAT:
        raise Invalid("format", f"not a parity-gate baseline (format {quote(str(fmt))})")
    version = found.get("version")
    if version is None:
        raise Invalid("", "missing key 'version'")
    if not isinstance(version, int):
        got = f"string {quote(version)}" if isinstance(version, str) else str(version)
        raise Invalid("version", f"expected an integer, got {got}")
    if version > VERSION:
        raise Invalid("", f"written by a newer parity-gate (format version {version:,}); {_UPGRADE}")
    if version < VERSION:
        raise Invalid("", f"format version {version:,} is no longer supported; {_RECREATE}")


def _parse(raw: bytes, limits: Limits) -> dict:
    _check_version(raw, limits)
    r = StreamReader(raw, limits)
    doc = DOCUMENT.read(r, "", limits)
    if r.pos != len(raw):
        raise Invalid("", f"trailing data after the msgpack map ({len(raw) - r.pos:,} more bytes)")
    return check_document(doc)


def decode_baseline(data: bytes, source: str, limits: Limits = DEFAULT_LIMITS) -> dict:
    """The document in ``data``; FormatError naming ``source`` for anything wrong."""
    try:
        return _parse(_decompress(bytes(data), limits), limits)
    except Invalid as e:
        raise FormatError(f"baseline `{source}`: {e}") from None


def _encode(doc: dict, source: str) -> bytes:
    limits = DEFAULT_LIMITS  # never write what the default reader would refuse
    try:
        canonical = check_document(DOCUMENT.conform(doc, "", limits))
        payload = msgpack.packb(canonical, use_bin_type=True, use_single_float=False, strict_types=True)
        if len(payload) > limits.max_decompressed_size:
            raise Invalid("", f"document is {len(payload):,} bytes (limit {limits.max_decompressed_size:,})")
        cctx = zstandard.ZstdCompressor(
            level=ZSTD_LEVEL, write_content_size=True, write_checksum=True, write_dict_id=False, threads=0
        )
        data = cctx.compress(payload)
        if len(data) > limits.max_file_size:
            raise Invalid("", f"file would be {len(data):,} bytes (limit {limits.max_file_size:,})")
    except Invalid as e:
        raise FormatError(f"baseline {source}: {e}") from None
    return data


def _doc_source(doc: object) -> str:
    model = doc.get("model") if isinstance(doc, dict) else None
    return f"document for model {quote(model)}" if isinstance(model, str) else "document"


def encode_baseline(doc: dict) -> bytes:
    """Validate ``doc`` against the schema and return its file bytes (same doc, same bytes)."""
    return _encode(doc, _doc_source(doc))


def read_baseline(path: Path, limits: Limits = DEFAULT_LIMITS) -> dict:
    """Read and validate one baseline file. FileNotFoundError passes through untouched."""
    source = str(path)
    flags = (
        os.O_RDONLY
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
    )
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FormatError(
                f"baseline `{source}`: is a symbolic link (baselines must be regular files)"
            ) from None
        raise FormatError(f"baseline `{source}`: cannot open ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"baseline `{source}`: not a regular file")
        cap = limits.max_file_size
        if st.st_size > cap:
            raise FormatError(f"baseline `{source}`: file is {st.st_size:,} bytes (limit {cap:,})")
        chunks, got = [], 0
        while got <= cap:  # the file may grow after fstat: never read past cap + 1
            chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as e:
        raise FormatError(f"baseline `{source}`: cannot read ({e.strerror})") from None
    finally:
        os.close(fd)
    return decode_baseline(b"".join(chunks), source, limits)


def write_baseline(path: Path, doc: dict) -> None:
    """Validate, encode and atomically replace ``path`` while holding the baseline lock
    (the folder is created when missing)."""
    data = _encode(doc, f"`{path}`")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with baseline_lock(path):
        remove_stale_temps(path)  # left by killed writers; no writer can be running now
        atomic_write_bytes(path, data)

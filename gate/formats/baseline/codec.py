"""Baseline files: one zstd frame (content size recorded) holding one msgpack map. Reading distrusts
the bytes (caps before each allocation, trailing data rejected); writing is deterministic (canonical
key order, float64, zstd level 10 with content size and checksum).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import zstandard

from gate.core.names import quote
from gate.errors import FormatError

from ..atomic import atomic_write_bytes, baseline_lock, remove_stale_temps
from ..frame import FileKind, parse, read_bytes
from ..limits import DEFAULT_LIMITS, Limits
from ..nodes import Record
from ..stream import Invalid, error_class
from .document import Baseline
from .schema import DOCUMENT, FORMAT, OLDEST, VERSION, check_document

Checker = Callable[[dict[str, Any]], dict[str, Any]]  # a document's checks beyond its schema

ZSTD_LEVEL = 10
KIND = FileKind("baseline", FORMAT, VERSION, "re-create it with `parity-gate update-baseline`", OLDEST)


def decode_baseline(data: bytes, source: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The document in ``data``; FormatError naming ``source`` for anything wrong."""
    try:
        return check_document(parse(bytes(data), limits, KIND, DOCUMENT))
    except Invalid as e:
        raise error_class(e)(f"baseline `{source}`: {e}") from None


def _encode(doc: dict[str, Any], source: str, kind: FileKind = KIND, schema: Record = DOCUMENT,
            check: Checker = check_document) -> bytes:
    limits = DEFAULT_LIMITS  # never write what the default reader would refuse
    try:
        canonical = check(schema.conform(doc, "", limits))
        payload = msgpack.packb(canonical, use_bin_type=True, use_single_float=False, strict_types=True)
        if len(payload) > limits.max_decompressed_size:
            raise Invalid("", f"document is {len(payload):,} bytes (limit {limits.max_decompressed_size:,})")
        cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True, write_checksum=True,
                                        write_dict_id=False, threads=0)
        data = cctx.compress(payload)
        if len(data) > limits.max_file_size:
            raise Invalid("", f"file would be {len(data):,} bytes (limit {limits.max_file_size:,})")
    except Invalid as e:
        raise FormatError(f"{kind.noun} {source}: {e}") from None
    return data


def encode_baseline(doc: Baseline | dict[str, Any]) -> bytes:
    """Validate ``doc`` (a ``Baseline`` or its document) against the schema and return its file
    bytes (same doc, same bytes)."""
    doc = _document(doc)
    model = doc.get("model") if isinstance(doc, dict) else None
    return _encode(doc, f"document for model {quote(model)}" if isinstance(model, str) else "document")


def _document(doc: Baseline | dict[str, Any]) -> dict[str, Any]:
    return doc.to_document() if isinstance(doc, Baseline) else doc


def read_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Read and validate one baseline file into its document. FileNotFoundError passes through."""
    return decode_baseline(read_bytes(Path(path), limits.max_file_size, KIND), str(path), limits)


def read_baseline(path: Path, limits: Limits = DEFAULT_LIMITS) -> Baseline:
    """Read and validate one baseline file into a ``Baseline``. FileNotFoundError passes through."""
    return Baseline.from_document(read_document(path, limits))


def write_baseline(path: Path, doc: Baseline | dict[str, Any]) -> None:
    """Validate, encode and atomically replace ``path`` with ``doc`` (a ``Baseline`` or its
    document) while holding the baseline lock (the folder is created when missing)."""
    data = _encode(_document(doc), f"`{path}`")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with baseline_lock(path):
        remove_stale_temps(path)  # left by killed writers; no writer can be running now
        atomic_write_bytes(path, data)

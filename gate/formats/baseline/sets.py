"""Baseline sets: one file holds the baselines of every case of a sweep, since one file per case would
flood the folder and every diff. Read with a baseline file's caps, each case by the document's rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.core.names import quote

from ..atomic import atomic_write_bytes, remove_stale_temps
from ..frame import FileKind, parse, read_bytes
from ..limits import DEFAULT_LIMITS, Limits
from ..nodes import Int, NameMap, Record, Str
from ..stream import Invalid, error_class
from .codec import _encode
from .schema import DOCUMENT, MODEL, check_document

SET_FORMAT = "parity-gate/baseline-set"
SET_VERSION, SET_OLDEST = 2, 1  # as the baseline's (docs/formats.md#versions)
SET_KIND = FileKind("baseline set", SET_FORMAT, SET_VERSION, "re-create it with `parity-gate update-baseline`",
                    SET_OLDEST)

SET_DOCUMENT = Record([("format", Str(len(SET_FORMAT), choices=(SET_FORMAT,))),
                       ("version", Int(SET_OLDEST, SET_VERSION)), ("sweep", MODEL),
                       ("cases", NameMap(MODEL, DOCUMENT, "max_runs", "cases"))])


def check_set(doc: dict[str, Any]) -> dict[str, Any]:
    """Each case is a valid baseline document of the model its key names; cases sorted by name."""
    for name, case in doc["cases"].items():
        if case["model"] != name:
            raise Invalid(f"cases[{quote(name)}].model", f"is {quote(case['model'])}, not the case's name")
        try:
            check_document(case)
        except Invalid as e:
            raise Invalid(f"cases[{quote(name)}]" + (f".{e.path}" if e.path else ""), e.message) from None
    doc["cases"] = dict(sorted(doc["cases"].items()))
    return doc


def decode_set(data: bytes, source: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    try:
        return check_set(parse(bytes(data), limits, SET_KIND, SET_DOCUMENT))
    except Invalid as e:
        raise error_class(e)(f"baseline set `{source}`: {e}") from None


def read_set(path: Path, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The validated set document at ``path``; FileNotFoundError passes through."""
    return decode_set(read_bytes(Path(path), limits.max_file_size, SET_KIND), str(path), limits)


def empty_set(sweep: str) -> dict[str, Any]:
    return {"format": SET_FORMAT, "version": SET_VERSION, "sweep": sweep, "cases": {}}


def encode_set(doc: dict[str, Any]) -> bytes:
    return _encode(doc, f"for sweep {quote(str(doc.get('sweep')))}", SET_KIND, SET_DOCUMENT, check_set)


def write_set(path: Path, doc: dict[str, Any]) -> None:
    """Validate, encode and atomically replace ``path``; the caller holds the folder's lock."""
    data = encode_set(doc)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    atomic_write_bytes(path, data)

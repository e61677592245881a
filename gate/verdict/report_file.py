"""JSON reports (``--json``): the writer, and a reader as distrustful as the baseline reader, since the
fork-safe ``comment`` reads a fork's report: size and depth are capped before anything walks it, and a
bad report is one ``FormatError`` naming the file and key (exit 2).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from gate.core.fields import Obj
from gate.core.jsonsafe import plain
from gate.core.names import bad_name
from gate.errors import FormatError
from gate.formats.atomic import atomic_write_bytes
from gate.verdict.next_step import next_step
from gate.verdict.sweeps import matrices
from gate.verdict.types import Report

MAX_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 64  # the writer nests about 10 deep (hint evidence series)
# The fields that hold names (and every object's keys): what the log and the comment print as names.
NAME_KEYS = frozenset({"name", "model", "layer", "provider", "providers", "check", "device", "precision",
                       "other"})


def report_document(report: Report) -> dict[str, Any]:
    """The JSON document of ``report``: its fields, then what readers get derived from them."""
    out = report.to_dict()
    for model, doc in zip(report.models, out["models"], strict=True):
        step = next_step(model)
        if step is not None:
            doc["next_step"] = step.to_dict()
    sweeps = matrices(report.models)
    if sweeps:
        out["sweeps"] = [mx.to_dict() for mx in sweeps]
    return out


def report_json(report: Report) -> str:
    """The report as JSON text (NaN/Inf written as null)."""
    return json.dumps(plain(report_document(report)), indent=1, allow_nan=False) + "\n"


def write_report(path: Path, report: Report) -> None:
    atomic_write_bytes(path, report_json(report).encode())


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        repeated = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"key {repeated[:40]!r} appears twice in one object")
    return out


def _depth(value: object) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _names(doc: object) -> tuple[str, str] | None:
    """The first name in ``doc`` that ``bad_name`` refuses: (the key it is under, why)."""
    stack = [("", doc)]
    while stack:
        key, node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                why = bad_name(k)
                if why:
                    return k, why
                stack.append((k, v))
        elif isinstance(node, list):
            stack.extend((key, v) for v in node)
        elif key in NAME_KEYS and (why := bad_name(node)):
            return key, why
    return None


def parse_report(data: bytes, source: str) -> Report:
    where = f"report `{source}`"
    try:
        doc = json.loads(data, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise FormatError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"{where}: not JSON ({e})") from None
    if _depth(doc) > MAX_DEPTH:
        raise FormatError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    bad = _names(doc)
    if bad is not None:
        raise FormatError(f"{where}: {ascii(bad[0])[:40]}: {bad[1]}")
    return Report.from_dict(Obj(doc, where))


def load_report(path: str | Path) -> Report:
    """Read and check the report at ``path``; FormatError names the file and the problem."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise FormatError(f"report `{path}`: {size:,} bytes is over the {MAX_BYTES:,}-byte limit")
        data = path.read_bytes()
    except FileNotFoundError:
        raise FormatError(f"report `{path}`: no such file") from None
    except OSError as e:
        raise FormatError(f"report `{path}`: cannot read ({e.strerror})") from None
    return parse_report(data, str(path))

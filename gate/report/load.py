"""Read a JSON report (`parity-gate check --json`) and check the parts the renderers rely on.

The check is shallow on purpose: the report comes from our own writer; what we guard against
is a wrong file (a baseline, a truncated upload, a report of a future version).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.errors import FormatError

SCHEMA = "parity-gate/report"
VERSION = 1
MAX_BYTES = 256 * 1024 * 1024
VERDICTS = ("pass", "regressed", "error")


def load_report(path: str | Path) -> dict[str, Any]:
    """Parse and validate the report at ``path``; FormatError names the file and the problem."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise FormatError(f"report `{path}`: no such file") from None
    except OSError as e:
        raise FormatError(f"report `{path}`: cannot read ({e.strerror})") from None
    if size > MAX_BYTES:
        raise FormatError(f"report `{path}`: {size:,} bytes is over the {MAX_BYTES:,}-byte limit")
    try:
        report = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"report `{path}`: not JSON ({e})") from None
    validate_report(report, str(path))
    return report


def validate_report(report: Any, where: str = "report") -> None:
    if not isinstance(report, dict):
        raise FormatError(f"report `{where}`: expected a JSON object, got {type(report).__name__}")
    if report.get("schema") != SCHEMA:
        raise FormatError(f"report `{where}`: key `schema` is {report.get('schema')!r}, expected {SCHEMA!r}")
    if report.get("version") != VERSION:
        raise FormatError(
            f"report `{where}`: version {report.get('version')!r} is not supported (this parity-gate reads {VERSION})"
        )
    if report.get("verdict") not in VERDICTS:
        raise FormatError(f"report `{where}`: key `verdict` is {report.get('verdict')!r}, expected one of {VERDICTS}")
    models = report.get("models")
    if not isinstance(models, list) or not all(isinstance(m, dict) and isinstance(m.get("name"), str) for m in models):
        raise FormatError(f"report `{where}`: key `models` must be a list of objects with a `name`")
    for m in models:
        providers = m.get("providers", [])
        if not isinstance(providers, list) or not all(isinstance(p, dict) for p in providers):
            raise FormatError(f"report `{where}`: model `{m['name']}`: `providers` must be a list of objects")
        for p in providers:
            if not isinstance(p.get("layers", []), list):
                raise FormatError(
                    f"report `{where}`: model `{m['name']}` provider `{p.get('name')}`: `layers` must be a list"
                )
    fr = report.get("first_regression")
    if fr is not None and not isinstance(fr, dict):
        raise FormatError(f"report `{where}`: key `first_regression` must be an object or null")
    changes = report.get("baseline_changes", [])
    if not isinstance(changes, list) or not all(isinstance(c, str) for c in changes):
        raise FormatError(f"report `{where}`: key `baseline_changes` must be a list of paths")

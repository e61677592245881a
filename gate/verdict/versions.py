"""Runtime versions that differ between a run and its baseline: a new release can move every layer's
numbers, so the report names it beside a regression.
"""

from __future__ import annotations

from gate.core.runs import Meta
from gate.verdict.notes import VersionChange

RUNTIMES = ("torch", "onnxruntime", "onnx", "onnxscript")


def version_changes(baseline: Meta | None, run: Meta) -> dict[str, VersionChange]:
    if baseline is None:
        return {}
    out = {}
    for name in RUNTIMES:
        before, now = getattr(baseline, name), getattr(run, name)
        # ``2.14.1+cpu`` and ``2.14.1`` are one release: the build label is not a numerics change by itself
        if before and now and before.split("+", 1)[0] != now.split("+", 1)[0]:
            out[name] = VersionChange(before, now)
    return out

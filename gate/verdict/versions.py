"""Runtime versions that differ between a run and its baseline.

A torch or ONNX Runtime release can move every layer's numbers; when a regression coincides
with a new version, the report says so (the PR comment names it), so the reader looks at the
version before the model.
"""

from __future__ import annotations

from gate.core.runs import Meta
from gate.verdict.notes import VersionChange

RUNTIMES = ("torch", "onnxruntime", "onnx", "onnxscript")


def version_changes(baseline: Meta | None, run: Meta) -> dict[str, VersionChange]:
    """The change of each runtime both recorded, where its release differs."""
    if baseline is None:
        return {}
    out = {}
    for name in RUNTIMES:
        before, now = getattr(baseline, name), getattr(run, name)
        if before and now and _release(before) != _release(now):
            out[name] = VersionChange(before, now)
    return out


def _release(version: str) -> str:
    """``2.14.1+cpu`` and ``2.14.1`` are one release: the build label is not a numerics change by itself."""
    return version.split("+", 1)[0]

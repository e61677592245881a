"""A Mermaid ``xychart-beta`` of log10(error) by layer for one provider, with the thresholds as a second
line; long models are bucketed keeping each bucket's worst value, so a spike is never averaged away.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gate.render.text import visible
from gate.verdict.types import ProviderVerdict

MAX_POINTS = 60
FLOOR = -16.0  # log10 of an error too small to matter (float64 round-off)


def _log(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    if value <= 0:
        return FLOOR
    if math.isinf(value):
        return 0.0 + 6  # a million times the reference: off any useful scale
    return max(FLOOR, math.log10(value))


def _bucket(series: list[float | None], n: int) -> list[float | None]:
    if len(series) <= n:
        return series
    out: list[float | None] = []
    for i in range(n):
        chunk = [v for v in series[i * len(series) // n : (i + 1) * len(series) // n] if v is not None]
        out.append(max(chunk) if chunk else None)
    return out


def _fill(series: list[float | None], default: float) -> list[float]:
    """Mermaid needs a number at every point: carry the previous one over gaps (folded layers), the first
    one over leading gaps (a dip to the chart's floor would read as an exact match)."""
    out, last = [], next((v for v in series if v is not None), default)
    for v in series:
        last = v if v is not None else last
        out.append(last)
    return out


def _title(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9 ._:#()\[\]/+-]", "_", visible(text))[:80]


def error_chart(model: str, provider: ProviderVerdict) -> str | None:
    """The fenced Mermaid block, or None when the provider measured no error at all."""
    layers = provider.rows
    values = _bucket([_log(row.error) for row in layers], MAX_POINTS)
    limits = _bucket([_log(row.threshold if row.error is not None else None) for row in layers], MAX_POINTS)
    known = [v for v in values if v is not None]
    if not known:
        return None
    low = min(known + [v for v in limits if v is not None])
    lines = ["```mermaid", "xychart-beta",
             f'    title "{_title(model)} on {_title(provider.name)}: log10 error by layer"',
             f'    x-axis "layer, execution order (1..{len(layers)})" 1 --> {len(layers)}',
             '    y-axis "log10 relative error"',
             "    line [" + ", ".join(f"{v:.2f}" for v in _fill(values, low)) + "]"]
    has_limits = any(v is not None for v in limits)
    if has_limits:
        lines.append("    line [" + ", ".join(f"{v:.2f}" for v in _fill(limits, low)) + "]")
    lines.append("```")
    bucketed = f"; {len(values)} buckets of about {len(layers) // len(values)} layers, each showing its worst" \
        if len(layers) > len(values) else ""
    lines.append(f"<sub>First line: measured error{'; second line: its threshold' if has_limits else ''}{bucketed}.</sub>")
    return "\n".join(lines)

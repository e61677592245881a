"""Exact metrics of a model's outputs, from the full tensors (beside the fingerprints' relative
L2): max-abs and max-rel error, ``allclose(rtol, atol)`` as NumPy defines it, and the worst
element. The whole-output recipe's numbers, so a reader can compare them with what they know."""

from __future__ import annotations

from typing import Any

import numpy as np

DEFAULT_TOLERANCE = (1e-5, 1e-8)  # numpy.allclose's rtol, atol


def exact(actual: np.ndarray, expected: np.ndarray, tolerance: tuple[float, float] | None = None) -> dict[str, Any] | None:
    """Metrics of ``actual`` against the float64 ``expected`` (None when the shapes differ)."""
    rtol, atol = tolerance or DEFAULT_TOLERANCE
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return None
    if a.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0, "allclose": True, "mismatched": 0, "count": 0, "rtol": rtol,
                "atol": atol, "worst_index": [], "expected": None, "actual": None}
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a - e)
        nonzero = e != 0
        rel = diff[nonzero] / np.abs(e[nonzero])  # where the expected value is zero, max-abs says it
        excess = diff - (atol + rtol * np.abs(e))  # > 0 where allclose fails
    bad = ~(excess <= 0)  # NaN compares false: a NaN is never close (equal_nan=False)
    worst = int(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)))
    index = [int(i) for i in np.unravel_index(worst, a.shape)]
    return {"max_abs": _worst(diff), "max_rel": _worst(rel), "allclose": not bool(bad.any()),
            "mismatched": int(bad.sum()), "count": int(a.size), "rtol": rtol, "atol": atol, "worst_index": index,
            "expected": float(e.flat[worst]), "actual": float(a.flat[worst])}


def _worst(values: np.ndarray) -> float:
    """The largest value; +inf when any is NaN or infinite (a NaN output is the worst error)."""
    if values.size == 0:
        return 0.0
    return float(values.max()) if np.isfinite(values).all() else float("inf")

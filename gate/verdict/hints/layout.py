"""``layout``: the same values in other positions (a transpose, permutation, layout or
indexing bug). Quantiles and moments are permutation-blind; the sketch is not."""

from __future__ import annotations

import math

from gate.core.spans import span
from gate.core.status import Check, RowStatus
from gate.core.target import REFERENCE_PROVIDER
from gate.fingerprint import Fingerprint, relative_error
from gate.verdict.hints.context import Context, make
from gate.verdict.notes import Hint
from gate.verdict.types import ProviderVerdict

# Relative tolerance for "same distribution" (quantiles, moments) when both sides are float64
# (a permutation only reorders the float64 accumulation: ~1e-15) and when one side is a
# float32/float16 runtime (its own rounding: ~1e-7 .. 1e-3).
LAYOUT_RTOL = {"float64": 1e-9, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}
# The sketch distance, divided by the tensor's spread (std * sqrt(n)), above which positions
# are considered different (a random permutation of an i.i.d. tensor gives ~sqrt(2)).
LAYOUT_MIN_MOVE = 0.05


def same_distribution(a: Fingerprint, b: Fingerprint, rtol: float) -> tuple[bool, dict[str, float]]:
    """Counts, min/max, moments and quantiles equal within ``rtol`` (relative to the spread)."""
    if (tuple(a.shape) != tuple(b.shape) or a.finite == 0 or b.finite == 0
            or (a.nan, a.posinf, a.neginf) != (b.nan, b.posinf, b.neginf)):
        return False, {}
    scale = max(math.sqrt(a.sumsq / a.finite), math.sqrt(b.sumsq / b.finite), 1e-300)
    diffs = {"quantiles": max(abs(x - y) for x, y in zip(a.quantiles, b.quantiles, strict=True)) / scale,
             "min": abs(a.min - b.min) / scale, "max": abs(a.max - b.max) / scale,
             "mean": abs(a.mean - b.mean) / scale, "std": abs(a.std - b.std) / scale,
             "meanabs": abs(a.meanabs - b.meanabs) / scale}
    zero_tol = max(2, int(rtol * a.count * 10))  # a float32 runtime may flush/round a few values to 0
    same = all(v <= rtol for v in diffs.values()) and abs(a.zero - b.zero) <= (0 if rtol < 1e-6 else zero_tol)
    return same, diffs


def _moved(a: Fingerprint, b: Fingerprint, err: float | None) -> float | None:
    """Distance between the tensors (sketch), relative to their spread (std * sqrt(n))."""
    if err is None:
        if a.sketch is None or b.sketch is None:
            return None
        err = relative_error(a, b)
    spread = b.std * math.sqrt(b.finite)
    return None if spread <= 0 else err * b.l2 / spread


def _permuted(now: Fingerprint | None, other: Fingerprint | None, err: float | None, rtol: float
              ) -> tuple[float, dict[str, float]] | None:
    """(relative move, stat differences) when ``now`` and ``other`` hold the same values in other
    positions, else None."""
    if now is None or other is None:
        return None
    same, diffs = same_distribution(now, other, rtol)
    moved = _moved(now, other, err) if same else None
    return (moved, diffs) if moved is not None and moved > LAYOUT_MIN_MOVE else None


MARKED = (RowStatus.FAIL, RowStatus.FOLLOWS)  # a reference row that moved: its own cause, or the first's


def hints(ctx: Context) -> list[Hint]:
    out = []
    if ctx.reference is not None:
        rtol = LAYOUT_RTOL.get(ctx.ref_dtype, 1e-5)
        found = [(row, hit) for row in ctx.reference.rows
                 if row.status in MARKED and row.check == Check.REFERENCE_DRIFT
                 for hit in [_permuted(ctx.ref_now.get(row.layer), ctx.ref_base.get(row.layer), row.value, rtol)]
                 if hit is not None]
        if found:
            row, (moved, diffs) = found[0]
            out.append(make(
                "layout", row.layer, REFERENCE_PROVIDER,
                f"{span(row.layer)}: the reference has the same values as in the baseline (quantiles, moments, counts equal "
                f"within {rtol:g}) in different positions (sketch distance {row.value:.3g} relative): a transpose, "
                "permutation, layout or indexing change",
                compared="reference vs baseline", relative_distance=row.value, distance_over_spread=moved,
                max_relative_stat_difference=max(diffs.values()), rtol=rtol,
                shape=list(ctx.ref_now[row.layer].shape), also_at=[r.layer for r, _ in found[1:6]]))
    return out + [hint for pv in ctx.runtimes() if (hint := _runtime_layout(ctx, pv)) is not None]


def _runtime_layout(ctx: Context, pv: ProviderVerdict) -> Hint | None:
    prun = ctx.prun(pv)
    if prun is None:
        return None
    rtol = max(LAYOUT_RTOL.get(prun.precision, 1e-5), LAYOUT_RTOL.get(ctx.ref_dtype, 1e-5))
    for row in pv.rows:
        if row.status != RowStatus.FAIL or row.check not in (Check.ERROR_GROWTH, Check.CEILING):
            continue
        pl, ref = prun.layers.get(row.layer), ctx.ref_now.get(row.layer)
        hit = _permuted(None if pl is None else pl.fp, ref, row.value, rtol)
        if hit is None or ref is None:  # no reference there: nothing was permuted
            continue
        moved, diffs = hit
        return make(
            "layout", row.layer, pv.name,
            f"{pv.name} at {span(row.layer)}: same values as the reference (quantiles, moments, counts equal within {rtol:g}) "
            f"in different positions (error {row.value:.3g}): a layout or transpose bug in this runtime or its graph",
            compared=f"{pv.name} vs reference", relative_distance=row.value, distance_over_spread=moved,
            max_relative_stat_difference=max(diffs.values()), rtol=rtol, shape=list(ref.shape))
    return None

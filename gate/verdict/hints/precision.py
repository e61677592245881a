"""``precision-loss``: the error at a runtime's first regressed layer is what a float16 or bfloat16 round
trip of that tensor gives, estimated from the reference fingerprint alone. Rounding is unbiased and barely
moves the norm (|d||x||| / ||x-x'|| ~ 1/sqrt(n)); a scaled weight or changed eps moves it by the whole error.
Never the reference's: what moves it is the model's weights or code, casts included, which ``change`` names,
even where the drift has a cast's size (weights rounded in a checkpoint).
"""

from __future__ import annotations

import math

import numpy as np

from gate.config.providers import is_gpu
from gate.core.spans import span
from gate.core.status import Check
from gate.fingerprint import QUANTILES, Fingerprint
from gate.verdict.hints.context import Context, make
from gate.verdict.notes import Hint
from gate.verdict.types import ProviderVerdict

CAST_FACTOR = 3.0  # measured error within this factor of the expected cast error
CAST_BIAS_LIMIT = 0.3  # |d||x||| / ||x - x'|| above which the change is a bias, not rounding
CAST_UNIT = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
SAMPLES = 20000


def _quantile_sample(fp: Fingerprint, n: int = SAMPLES) -> np.ndarray:
    """Values drawn (deterministically) from the fingerprint's quantile function."""
    probs = np.array([0.0, *QUANTILES, 1.0])
    vals = np.array([fp.min, *fp.quantiles, fp.max], dtype=np.float64)
    return np.interp((np.arange(n) + 0.5) / n, probs, vals)


def _bf16(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32).astype(np.float64)


def expected_cast(fp: Fingerprint, dtype: str) -> tuple[float, float]:
    """(relative L2 error, norm shift / error) of a ``dtype`` round trip, on values drawn from the
    fingerprint's quantile function. The norm shift is ~0 for rounding of normal numbers and ~1
    where the cast flushes values to zero (underflow) or saturates them."""
    if fp.finite == 0 or not all(math.isfinite(v) for v in (fp.min, fp.max, *fp.quantiles)):
        return math.nan, math.nan
    x = _quantile_sample(fp)
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float16).astype(np.float64) if dtype == "float16" else _bf16(x)
    norm = float(np.linalg.norm(x))
    if norm == 0:
        return 0.0, 0.0
    err = float(np.linalg.norm(y - x))
    if not math.isfinite(err):
        return math.inf, math.nan
    return err / norm, (abs(float(np.linalg.norm(y)) - norm) / err if err > 0 else 0.0)


def _sides(ctx: Context, pv: ProviderVerdict, layer: str) -> tuple[Fingerprint | None, Fingerprint | None]:
    """(what moved, what it is compared with) at ``layer`` for a runtime."""
    prun = ctx.prun(pv)
    pl = None if prun is None else prun.layers.get(layer)
    return (None if pl is None else pl.fp), ctx.ref_now.get(layer)


def _bias_limit(base_limit: float, cast: tuple[float, float]) -> float:
    # A cast that flushes small values to zero is biased too: allow the bias the cast itself gives.
    return max(base_limit, 1.5 * (cast[1] if math.isfinite(cast[1]) else 0.0))


def hints(ctx: Context) -> list[Hint]:
    out = []
    for pv in ctx.runtimes():
        fr = pv.first_regression
        if (fr is None or fr.check not in (Check.ERROR_GROWTH, Check.CEILING)
                or fr.value is None or fr.value <= 0):
            continue
        if pv.precision == "float32" and not is_gpu(pv.name) and ctx.run.meta.lowered == []:
            continue  # a float32 CPU run of a graph that computes nothing below float32: no cast to name
        now, ref = _sides(ctx, pv, fr.layer)
        if now is None or ref is None or ref.l2 <= 0:
            continue
        row = ctx.rows(pv).get(fr.layer)
        base = 0.0 if row is None else (row.baseline or 0.0)  # what counts is the error beyond the baseline's
        excess = math.sqrt(max(fr.value**2 - base**2, 0.0))
        if excess > 0 and (hint := _match(pv, fr.layer, now, ref, excess)) is not None:
            out.append(hint)
    return out


def _match(pv: ProviderVerdict, layer: str, now: Fingerprint, ref: Fingerprint, excess: float) -> Hint | None:
    cast = {d: expected_cast(ref, d) for d in CAST_UNIT}
    expected = {d: e for d, (e, _) in cast.items()}
    bias = abs(now.l2 - ref.l2) / ref.l2 / excess  # ~1/sqrt(n) for rounding, ~1 for a scale change
    base_limit = max(CAST_BIAS_LIMIT, 3.0 / math.sqrt(max(ref.finite, 1)))
    fits = {d: e for d, e in expected.items()
            if math.isfinite(e) and e > 0 and e / CAST_FACTOR <= excess <= e * CAST_FACTOR
            and bias <= _bias_limit(base_limit, cast[d])}
    if not fits:
        return None
    dtype = min(fits, key=lambda d: abs(math.log(excess / fits[d])))
    bias_limit = _bias_limit(base_limit, cast[dtype])
    outside = fits[dtype] > 30 * CAST_UNIT[dtype]
    return make(
        "precision-loss", layer, pv.name,
        f"{pv.name} ({pv.precision}) at {span(layer)}: the error {excess:.3g} matches a {dtype} round trip of this tensor "
        f"(expected {fits[dtype]:.3g}, unit roundoff {CAST_UNIT[dtype]:.3g}), with the norm shift such a cast gives "
        f"({bias:.2g} of the error, limit {bias_limit:.2g}): a cast to {dtype} (autocast, .half(), a reduced-precision "
        "kernel or EP setting)"
        + (f"; most of it is underflow/overflow: this tensor's values lie outside {dtype}'s normal range"
           if outside else ""),
        dtype=dtype, measured=excess, expected=fits[dtype], ratio=excess / fits[dtype],
        expected_float16=expected["float16"], expected_bfloat16=expected["bfloat16"], factor=CAST_FACTOR,
        norm_shift_over_error=bias, norm_shift_limit=bias_limit, expected_norm_shift=cast[dtype][1],
        outside_normal_range=outside, estimated_from="reference fingerprint quantiles (min, 9 quantiles, max)")

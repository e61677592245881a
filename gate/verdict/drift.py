"""How far a layer's float64 reference moved from its baseline (docs/verdict.md#verdict): the relative L2 of
the sketches, or the largest move of an order statistic (min, quantiles, max) relative to its own magnitude
or, if larger, the magnitude typical of the quantiles off the min/max plateau. Fill values (a mask's -1e30)
dominate ||ref|| and hide every other element from relative L2; they cannot dominate that magnitude. A
runtime's error against a reference the fills dominate (``filled``) takes that move too
(``against_reference``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.fingerprint import QUANTILES, Fingerprint, difference

PLATEAU = 1e-6  # a quantile this close (relative) to the min, the max or a neighbour sits on a plateau
FILLED = 1e3  # a min or max this many times the quantiles' typical magnitude: fills (-1e4, -1e9), not a tail


@dataclass(frozen=True)
class Drift:
    """The larger of the two measures; ``statistic`` names the order statistic where it is the larger."""

    value: float
    absolute: bool = False  # relative L2 against an all-zero baseline: the RMS of the difference
    statistic: str | None = None

    def words(self) -> str:
        if self.statistic:  # relative L2 stays far under it: fills of huge magnitude dominate ||ref||
            kind = "quantile " if self.statistic.startswith("q") else ""
            return f"{kind}{self.statistic}, relative to its magnitude or the quantiles' typical one"
        return "RMS of the difference: the baseline is all zeros" if self.absolute else "relative L2"


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= PLATEAU * max(abs(a), abs(b))


def typical(fp: Fingerprint) -> float:
    """The largest magnitude of the quantiles not on a plateau (near the min, the max or a neighbouring
    quantile: fills, a mask, a clamp); where every one is, the largest magnitude of the tensor."""
    q = fp.quantiles
    plateau = [_near(v, fp.min) or _near(v, fp.max) or (i > 0 and _near(v, q[i - 1]))
               or (i + 1 < len(q) and _near(v, q[i + 1])) for i, v in enumerate(q)]
    return max((abs(v) for v, flat in zip(q, plateau, strict=True) if not flat),
               default=max(abs(fp.min), abs(fp.max)))


def filled(fp: Fingerprint) -> bool:
    """Whether fills dominate ``fp``'s magnitude: its min or max over FILLED times ``typical`` (a mask's
    -1e9 beside values near 1), where relative L2 sees the fills alone."""
    return fp.finite > 0 and max(abs(fp.min), abs(fp.max)) > FILLED * typical(fp)


def order_move(now: Fingerprint, base: Fingerprint) -> tuple[float, str | None]:
    """The largest move of an order statistic, relative to max(its magnitude, ``typical``): a refactor's
    roundings move each by ~1e-16 of that, however close to zero it lies. (0, None) without finite values
    or against an all-zero baseline (no magnitude to be relative to: the RMS of the difference judges)."""
    if not now.finite or not base.finite or not base.l2:
        return 0.0, None
    m = max(typical(now), typical(base))
    names = ("min", *(f"q{q:g}" for q in QUANTILES), "max")
    pairs = zip(names, (now.min, *now.quantiles, now.max), (base.min, *base.quantiles, base.max), strict=True)
    moves = [(moved, name) for name, a, b in pairs if (moved := relative_move(a, b, m)) is not None]
    return max(moves, default=(0.0, None))


def relative_move(a: float, b: float, typical_magnitude: float) -> float | None:
    """How far an order statistic moved from ``b`` to ``a``, relative to max(its magnitude, the typical
    one); None where both are zero and so is the typical magnitude."""
    scale = max(abs(a), abs(b), typical_magnitude)
    return abs(a - b) / scale if scale > 0 else None


def drift(now: Fingerprint, base: Fingerprint) -> Drift:
    """The larger of relative L2 (``difference``) and ``order_move``."""
    change = difference(now, base)
    moved, name = order_move(now, base)
    if moved > change.value:
        return Drift(moved, statistic=name)
    return Drift(change.value, change.absolute)

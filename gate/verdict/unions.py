"""Whether one value's elements are those of several together, as far as a fingerprint's counts and moments
tell: layers merged into one (projections, a module's calls batched into one) or one split into several."""
from __future__ import annotations

import math

from gate.fingerprint import Fingerprint


def union_of(fp: Fingerprint, parts: list[Fingerprint], limit: float) -> bool:
    """Whether ``fp``'s elements are those of ``parts`` together, as far as counts and moments tell, each
    within what a relative L2 error of ``limit`` can move them."""
    if fp.count != sum(p.count for p in parts) or fp.dtype != parts[0].dtype:
        return False
    if any(getattr(fp, k) != sum(getattr(p, k) for p in parts) for k in ("nan", "posinf", "neginf")):
        return False
    norm = math.sqrt(max(fp.sumsq, 0.0))
    bound = 2 * limit * norm  # what the error moves an element by at most, doubled
    if abs(fp.sumsq - sum(p.sumsq for p in parts)) > 2 * bound * norm + bound * bound:
        return False
    spread = bound * math.sqrt(fp.count)
    if any(abs(getattr(fp, k) - sum(getattr(p, k) for p in parts)) > spread for k in ("sum", "sumabs")):
        return False
    low, high = min(p.min for p in parts), max(p.max for p in parts)
    return abs(fp.min - low) <= bound and abs(fp.max - high) <= bound

"""Inputs for the fingerprint's backends that plain random data never reaches."""

from __future__ import annotations

import numpy as np

# dtype -> (its bits, the bits of its largest finite value, of 1.0, mantissa bits)
_LAYOUT = {
    "float16": (np.uint16, 0x7BFF, 0x3C00, 10),
    "bfloat16": (np.uint16, 0x7F7F, 0x3F80, 7),
    "float32": (np.uint32, 0x7F7FFFFF, 0x3F800000, 23),
    "float64": (np.uint64, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 52),
}


def masked_at_max(r: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    """30% ``finfo(dtype).max`` (a mask's sentinel, counted as Inf), 40% values of the top binade just
    below it (the same top key bits: the quantile passes meet the mask beside values they rank), 25%
    values in [1, 2), a few Inf and NaN; either sign. bfloat16 as its uint16 bits."""
    bits, top, one, mant = _LAYOUT[dtype]
    pick = r.random(n)
    below = top - r.integers(1, 2 ** min(mant, 20), n, dtype=np.uint64)
    ordinary = one + r.integers(0, 2**mant, n, dtype=np.uint64)
    top = np.uint64(top)
    mag = np.select([pick < 0.3, pick < 0.7, pick < 0.95, pick < 0.98], [top, below, ordinary, top + 1],
                    top + np.uint64(2))
    sign = (r.random(n) < 0.5).astype(np.uint64) << np.uint64(8 * np.dtype(bits).itemsize - 1)
    raw = (mag | sign).astype(bits)
    return raw if dtype == "bfloat16" else raw.view(dtype)

"""The native kernel's quantile machinery on data built to reach each of its paths.

Zeros are counted, not ranked (their ranks follow the negative values); a group dominated
by one value is counted by vector compares during a refinement pass; at most CAP
candidates are collected, more are refined first. Every case is checked against the
order statistics NumPy computes, for several thread counts.
"""

from __future__ import annotations

import numpy as np
import pytest

import gate.fingerprint as F
from tests.support import tools

pytestmark = tools.needs((F.native_error or "the native kernel is not built") if F._native_impl is None else None)

CAP = 1 << 19  # gate/fingerprint/src/pgfp_internal.h
SMALL = 1 << 13
CODES = {"float32": 2, "float64": 3}


def kernel_quantiles(x: np.ndarray, qs: list[float], threads: int) -> list[float]:
    from gate.fingerprint._kernel import ffi, lib

    out = ffi.new("pgfp_result *")
    rc = lib.pgfp_fingerprint(
        ffi.from_buffer(x), x.size, CODES[x.dtype.name], ffi.new("double[]", qs), len(qs), threads, out
    )
    assert rc == 0
    return list(ffi.unpack(out.q, len(qs)))


def order_statistics(x: np.ndarray, qs: list[float]) -> list[float]:
    v = x[np.isfinite(x)].astype(np.float64)
    ranks = [int(np.floor(q * (v.size - 1))) for q in qs]
    return (np.partition(v, ranks)[ranks] + 0.0).tolist()


def q_for_rank(r: int, m: int) -> float:
    """A probability whose rank floor(q * (m - 1)) is exactly r."""
    q = (r + 0.5) / (m - 1)
    assert int(np.floor(q * (m - 1))) == r
    return q


def check(x: np.ndarray, qs: list[float], threads=(1, 2, 3)) -> None:
    want = order_statistics(x, qs)
    for t in threads:
        got = kernel_quantiles(x, qs, t)
        assert np.array_equal(np.array(got), np.array(want)), (x.dtype, t, got, want)


@pytest.mark.parametrize("n", [5_000, SMALL + 1, 700_001])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ranks_at_the_edges_of_the_zeros(n, dtype):
    """Ranks nneg-1, nneg (first zero), nneg+Z-1 (last zero), nneg+Z (first positive)."""
    r = np.random.default_rng(n)
    x = r.standard_normal(n)
    zero = r.random(n) < 0.4
    x[zero] = np.where(r.random(zero.sum()) < 0.5, 0.0, -0.0)
    x = x.astype(dtype)
    nneg, z = int((x < 0).sum()), int((x == 0).sum())
    ranks = [0, nneg - 1, nneg, nneg + 1, nneg + z - 1, nneg + z, nneg + z + 1, n - 1]
    check(x, [q_for_rank(k, n) if k < n - 1 else 1.0 for k in ranks])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_only_zeros_and_one_sign(dtype):
    for x in (np.zeros(400_000), -np.abs(np.random.default_rng(1).standard_normal(400_000))):
        x = x.astype(dtype)
        x[::3] = 0.0
        check(x, [0.0, 0.25, 0.5, 0.75, 1.0])


def test_denormals_share_the_zero_bin():
    """Tiny positive/negative subnormals sit in the 16-bit bins next to zero's; +0 and -0
    share their raw prefixes but must never be ranked among them."""
    r = np.random.default_rng(2)
    n = 900_000
    tiny = np.finfo(np.float32).smallest_subnormal
    x = np.zeros(n, np.float32)
    x[r.random(n) < 0.5] = -0.0
    pos, neg = r.random(n) < 0.1, r.random(n) < 0.1
    x[pos] = tiny * r.integers(1, 3000, pos.sum())
    x[neg & ~pos] = -tiny * r.integers(1, 3000, (neg & ~pos).sum())
    m = n
    nneg, z = int((x < 0).sum()), int((x == 0).sum())
    check(x, [q_for_rank(k, m) for k in (nneg // 2, nneg + z + (n - nneg - z) // 2, nneg - 1, nneg + z)])


def _heavy(dtype, n, share, value, spread, seed):
    """share of n elements equal to value; spread: that many more in value's 16-bit bin
    (value * (1 + U[0, 2^-8))), the rest N(0, 1)."""
    r = np.random.default_rng(seed)
    x = r.standard_normal(n)
    pick = r.random(n)
    x[pick < share] = value
    near = (pick >= share) & (pick < share + spread)
    x[near] = value * (1 + r.random(near.sum()) * 2.0**-8)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "share,value,spread",
    [
        (0.7, 6.0, 0.0),  # saturation (ReLU6): the group holds one value
        (0.5, -1e9, 0.0),  # an additive attention mask
        (0.6, 1.0, 0.2),  # the heavy value shares its bin with many others
        (0.1, 2.5, 0.6),  # ... and is too rare in the bin's sample to be taken as heavy
    ],
)
def test_heavy_values(dtype, share, value, spread):
    x = _heavy(dtype, 3_000_000, share, value, spread, seed=int(share * 100))
    check(x, [0.001, 0.01, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99, 0.999])


def test_heavy_value_next_to_float64_neighbours():
    """float64 refines 12 bits at a time: values one ulp away from the heavy one stay in
    its group through every level, so the group is never pure until the last bits."""
    n = 2_000_000
    r = np.random.default_rng(7)
    x = np.full(n, 1.0)
    k = r.random(n)
    x[k < 0.3] = np.nextafter(1.0, 2.0)
    x[(k >= 0.3) & (k < 0.35)] = 1.0 + 2.0**-40
    x[k >= 0.9] = r.standard_normal((k >= 0.9).sum())
    check(x, [0.01, 0.2, 0.45, 0.5, 0.7, 0.75, 0.8, 0.99])


@pytest.mark.parametrize("where", ["tail", "between the sampled chunks"])
def test_heavy_value_the_sample_may_miss(where):
    """The heavy-value sample reads the first 1024 elements of 64 evenly spaced segments;
    a value that avoids them is not taken as heavy, and the result is exact either way."""
    n = 3_000_000
    x = np.random.default_rng(8).standard_normal(n).astype(np.float32)
    if where == "tail":
        x[-1_300_000:] = 3.5
    else:
        step = ((n + 1023) // 1024 // 64) * 1024
        keep = (np.arange(n) % step) < 1024
        x[~keep] = 3.5
    check(x, [0.001, 0.5, 0.7, 0.71, 0.9, 0.999])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("extra", [0, 1])
def test_collection_cap_boundary(dtype, extra):
    """All keys in one 16-bit bin: CAP candidates are collected, CAP + 1 refined first."""
    n = CAP + extra
    x = (1.0 + np.random.default_rng(extra).random(n) * 2.0**-8).astype(dtype)
    check(x, [0.0, 0.1, 0.5, 0.9, 1.0], threads=(1, 2))


def test_whole_fingerprint_on_skewed_data_matches_the_specification():
    """The other fields too, through the public entry point, on each kind of data above."""
    r = np.random.default_rng(9)
    n = 700_000
    relu = np.maximum(r.standard_normal(n), 0)
    cases = [
        relu.astype(np.float32),
        relu.astype(np.float64),
        _heavy("float32", n, 0.6, 1.0, 0.2, 3),
        _heavy("float64", n, 0.7, -6.0, 0.0, 4),
        np.full(n, 3.25, np.float32),
        np.where(r.random(n) < 0.5, -np.inf, r.standard_normal(n)).astype(np.float32),
    ]
    for x in cases:
        assert F.fingerprint(x, backend="native") == F.fingerprint(x, backend="numpy"), x.dtype


def _window_cases() -> dict[str, np.ndarray]:
    """float64 data whose wanted ranks fall at or past the edges of pass 1's digit window
    (16 exponents above the largest of 512 sampled magnitudes, 256 exponents deep)."""
    r = np.random.default_rng(21)
    n = 1_200_007
    x, pick = r.standard_normal(n), r.random(n)
    return {
        "0.5% at +-1e300, past the top": np.where(pick < 0.005, np.where(pick < 0.0025, 1e300, -1e300), x),
        "60% near 1e-300, under the bottom": np.where(pick < 0.6, 1e-300 * r.standard_normal(n), x),
        "2% from 2^14 to 2^18, across the top edge": np.where(
            pick < 0.02, 2.0 ** r.uniform(14, 18, n), 1.0 + x * 1e-3
        ),
        "2% of negatives from 2^-228 to 2^-236, across the bottom": np.where(
            pick < 0.02, -(2.0 ** r.uniform(-236, -228, n)), np.abs(x) + 0.5
        ),
        "half at 1e-200, half at 1e100": np.where(pick < 0.5, 1e-200, 1e100) * x,
        "every exponent": np.exp(r.uniform(-700, 700, n)) * np.sign(x),
    }


@pytest.mark.parametrize("case", list(_window_cases()))
def test_float64_ranks_past_the_digit_window(case):
    """float64's pass 1 bins a window of exponents finely (dig64); a wanted rank in an edge
    bin runs pass 1 again over the whole range, with every thread count."""
    x = _window_cases()[case]
    check(x, [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0])

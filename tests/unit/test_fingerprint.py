"""The NumPy reference (the specification) against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gate.errors import FormatError
from gate.fingerprint import (
    QUANTILES,
    SKETCH_WIDTH,
    STATS,
    Fingerprint,
    fingerprint,
    relative_error,
    sketch_distance,
)
from gate.fingerprint.reference import _lane_sums, combine_lanes
from tests.support import tools


def _spec(x, **kw):
    return fingerprint(x, backend="numpy", **kw)


def test_lane_sums_are_sequential_per_lane():
    rng = np.random.default_rng(0)
    for rows in (1, 2, 3, 1000, 8192):
        v = rng.standard_normal(rows * 8) * 10.0 ** rng.integers(-8, 8, rows * 8)
        expect = np.zeros(8)
        for r in range(rows):
            expect = expect + v[r * 8 : (r + 1) * 8]
        assert _lane_sums(v).tobytes() == expect.tobytes()


def test_fields_match_direct_numpy():
    x = np.random.default_rng(1).standard_normal((4, 33, 17)).astype(np.float32)
    fp = _spec(x)
    v = x.astype(np.float64).ravel()
    assert (fp.shape, fp.dtype, fp.count) == ((4, 33, 17), "float32", v.size)
    assert (fp.nan, fp.posinf, fp.neginf, fp.zero) == (0, 0, 0, 0)
    assert fp.min == v.min() and fp.max == v.max()
    assert fp.sum == pytest.approx(math.fsum(v), rel=1e-12)
    assert fp.sumsq == pytest.approx(math.fsum(v * v), rel=1e-12)
    assert fp.sumabs == pytest.approx(math.fsum(abs(v)), rel=1e-12)
    assert fp.quantiles == tuple(np.quantile(v, QUANTILES, method="lower"))
    assert fp.std == pytest.approx(v.std(), rel=1e-9)
    assert fp.l2 == pytest.approx(np.linalg.norm(v), rel=1e-12)


def test_sum_follows_the_block_lane_order():
    x = np.random.default_rng(2).standard_normal(200_003) * 1e3
    fp = _spec(x)
    tot = np.zeros(8)
    for b0 in range(0, x.size, 65536):
        blk = x[b0 : b0 + 65536]
        lanes = np.zeros(8)
        for o, val in enumerate(blk.tolist()):
            lanes[o % 8] += val
        tot = tot + lanes
    assert fp.sum == combine_lanes(tot)


def test_nonfinite_are_counted_not_summed():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 2.0, -3.0], np.float32)
    fp = _spec(x)
    assert (fp.nan, fp.posinf, fp.neginf, fp.zero, fp.finite) == (1, 1, 1, 2, 4)
    assert (fp.min, fp.max, fp.sum, fp.sumsq, fp.sumabs) == (-3.0, 2.0, -1.0, 13.0, 5.0)
    assert math.copysign(1.0, _spec(np.array([-0.0])).min) == 1.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_largest_finite_value_counts_as_inf(dtype):
    """finfo(dtype).max, a mask's sentinel, counts as Inf: a float64 reference masked with -DBL_MAX and a
    float32 runtime masked with -FLT_MAX then agree on the values they judge."""
    bf16 = dtype == "bfloat16"
    if bf16:  # its values, exact in float32
        wide, top, below = np.dtype(np.float32), 3.3895313892515355e38, 3.3762391092936863e38
    else:
        wide = np.dtype(dtype)
        top = float(np.finfo(wide).max)
        below = float(np.nextafter(wide.type(top), wide.type(0)))
    x = np.array([1.0, -top, top, below, -top, 2.0], wide)
    fp = _spec((x.view(np.uint32) >> 16).astype(np.uint16), dtype="bfloat16") if bf16 else _spec(x)
    assert (fp.nan, fp.posinf, fp.neginf, fp.finite) == (0, 1, 2, 3)
    assert (fp.min, fp.max, fp.sum) == (1.0, below, 3.0 + below)
    assert set(fp.quantiles) == {1.0, 2.0}  # ranks 0 and 1 of [1.0, 2.0, below]
    if dtype == "float32":
        logits, mask = np.array([0.5, -1.25, 3.0, 0.75], np.float32), np.array([False, True, False, True])
        masked = [np.where(mask, np.finfo(d).min, logits.astype(d)) for d in (np.float32, np.float64)]
        assert _spec(masked[1]) == _spec(np.where(mask, -np.inf, logits.astype(np.float64)))
        assert relative_error(_spec(masked[0]), _spec(masked[1])) == 0.0


def test_empty_all_nan_zero_d():
    for x in (np.zeros((0, 3), np.float32), np.full(5, np.nan)):
        fp = _spec(x)
        assert math.isnan(fp.min) and math.isnan(fp.max) and all(math.isnan(q) for q in fp.quantiles)
        assert fp.sum == 0.0 and not fp.sketch.any() and math.isnan(fp.mean)
    fp = _spec(np.float16(3.5))
    assert fp.shape == () and fp.count == 1 and fp.quantiles == (3.5,) * len(QUANTILES)


@pytest.mark.parametrize(
    "bad", [np.arange(3), np.ones(3, bool), np.ones(3, np.complex64), np.ones(2, np.longdouble)]
)
def test_non_floating_is_a_type_error(bad):
    with pytest.raises(TypeError, match="fingerprint"):
        fingerprint(bad)


def test_bfloat16_forms_agree():
    ml_dtypes = tools.module("ml_dtypes", "onnx installs it")
    x = np.random.default_rng(3).standard_normal(1000).astype(ml_dtypes.bfloat16)
    a = _spec(x)
    b = _spec(x.view(np.uint16), dtype="bfloat16")
    assert a == b and a.dtype == "bfloat16"
    assert a.quantiles == tuple(np.quantile(x.astype(np.float64), QUANTILES, method="lower"))


def test_strided_input_is_read_logically():
    x = np.random.default_rng(4).standard_normal((64, 48)).astype(np.float32)
    assert _spec(x.T) == _spec(np.ascontiguousarray(x.T))
    assert _spec(x[::2, ::3]) == _spec(x[::2, ::3].copy())
    assert _spec(x.astype(">f4")) == _spec(x)


def test_dict_roundtrip_and_validation():
    fp = _spec(np.linspace(-1, 1, 100))
    d = fp.to_dict()
    assert list(d) == ["shape", "dtype", *STATS, "q", "sketch"]  # the order the formats write
    assert {"count", "nan", "posinf", "neginf", "zero", "min", "max", "sum", "sumsq", "sumabs"} <= set(STATS)
    assert len(d["sketch"]) == SKETCH_WIDTH * 8
    assert Fingerprint.from_dict(d) == fp
    assert Fingerprint.from_dict(fp.to_dict(sketch=False)).sketch is None
    assert Fingerprint.from_dict(fp.to_dict(sketch=False)) == fp  # sketch compared only when both have one
    with pytest.raises(FormatError, match="'q'"):
        Fingerprint.from_dict({**d, "q": [1.0]})
    with pytest.raises(FormatError, match="'count'"):
        Fingerprint.from_dict({**d, "count": 99})


def _mix(x):
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def test_sketch_follows_the_documented_hash_and_order():
    from gate.fingerprint import SKETCH_SEED

    x = np.random.default_rng(6).standard_normal(70_003)
    x[::7] = np.nan
    sk = np.zeros(SKETCH_WIDTH)
    for b0 in range(0, x.size, 65536):
        blk = np.zeros(SKETCH_WIDTH)
        for i in range(b0, min(b0 + 65536, x.size)):
            if not math.isfinite(x[i]):
                continue
            g, j = i >> 3, i & 7
            h = _mix((g & 0xFFFFFFFF) ^ _mix((g >> 32) ^ SKETCH_SEED))
            bucket = 8 * (h >> 27) + (j ^ ((h >> 24) & 7))
            blk[bucket] += -x[i] if (h >> (16 + j)) & 1 else x[i]
        sk = sk + blk
    assert _spec(x).sketch.tobytes() == sk.tobytes()


def test_sketch_distance_estimates_l2():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((8, 16, 32)).astype(np.float32)
    b = a + (rng.standard_normal(a.shape) * 1e-3).astype(np.float32)
    exact = np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(a.astype(np.float64))
    est = relative_error(_spec(b), _spec(a))
    assert est == pytest.approx(exact, rel=0.25)
    assert sketch_distance(_spec(a), _spec(a)) == 0.0 and relative_error(_spec(a), _spec(a)) == 0.0


def test_package_is_callable_and_keeps_its_attributes():
    import gate.fingerprint as F

    assert F(np.ones(3)).sum == 3.0
    assert F.backend in ("native", "numpy") and F.fingerprint is fingerprint

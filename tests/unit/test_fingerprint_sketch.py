"""The sketch as an estimator of the relative L2 error between two tensors.

Run on the default backend (the suite runs once per backend)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gate.fingerprint import Sketches, difference, fingerprint, relative_error, sketch_distance, within
from gate.fingerprint._model import SUM_SLACK


def exact_rel(x, ref):
    x64, r64 = np.asarray(x, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm((x64 - r64).ravel()) / np.linalg.norm(r64.ravel()))


def check(x, ref, tol=0.25):
    exact = exact_rel(x, ref)
    assert exact > 0
    est = relative_error(fingerprint(x), fingerprint(ref))
    assert abs(est / exact - 1) <= tol, (est, exact)
    return est / exact


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    ("dtype", "rel"), [("float32", 1e-7), ("float32", 1e-3), ("float64", 1e-12), ("float64", 1e-6)]
)
def test_dense_difference(seed, dtype, rel):
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal((4, 16, 32, 32)).astype(dtype)
    x = (ref * (1 + rel * rng.standard_normal(ref.shape))).astype(dtype)
    check(x, ref)


@pytest.mark.parametrize(("dtype", "rel"), [("float32", 1e-7), ("float64", 1e-12)])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("channels", [3, 8, 64])
def test_difference_confined_to_one_channel(dtype, rel, layout, channels):
    rng = np.random.default_rng(channels)
    shape = (2, channels, 24, 24) if layout == "nchw" else (2, 24, 24, channels)
    ref = rng.standard_normal(shape).astype(dtype)
    x = ref.copy()
    sel = (slice(None), 1) if layout == "nchw" else (Ellipsis, 1)
    x[sel] = (ref[sel] * (1 + 100 * rel * rng.standard_normal(ref[sel].shape))).astype(dtype)
    check(x, ref)


@pytest.mark.parametrize("stride", [2, 8, 16, 64, 256, 4096, 65536])
def test_strided_difference(stride):
    rng = np.random.default_rng(stride)
    ref = rng.standard_normal(1 << 20)
    x = ref.copy()
    x[3::stride] += 1e-9 * rng.standard_normal(x[3::stride].shape)
    check(x, ref)


def test_few_elements():
    rng = np.random.default_rng(11)
    ref = rng.standard_normal((64, 64, 16)).astype(np.float32)
    x = ref.copy()
    for k, i in enumerate(rng.choice(ref.size, 5, replace=False)):
        x.flat[i] *= 1.001 + 0.001 * k
    check(x, ref)
    one = ref.copy()
    one.flat[12345] += 1.0  # a single element: the sketch is exact up to rounding
    d = float(one.flat[12345]) - float(ref.flat[12345])
    assert sketch_distance(fingerprint(one), fingerprint(ref)) == pytest.approx(d, rel=1e-12)


def test_transpose_is_detected_although_the_distribution_is_identical():
    ref = np.random.default_rng(12).standard_normal((256, 256)).astype(np.float32)
    x = np.ascontiguousarray(ref.T)
    a, b = fingerprint(x), fingerprint(ref)
    assert a.quantiles == b.quantiles and (a.min, a.max, a.count) == (b.min, b.max, b.count)
    assert a.sumsq == pytest.approx(b.sumsq, rel=1e-12)
    assert relative_error(a, b) == pytest.approx(exact_rel(x, ref), rel=0.25)
    assert relative_error(a, b) > 1.0  # ~sqrt(2) for uncorrelated entries


def test_dense_accuracy_matches_the_documented_spread():
    # std of est/exact ~ 1/sqrt(2 * 256) = 0.044 for dense differences
    rng = np.random.default_rng(13)
    ratios = []
    for _ in range(60):
        ref = rng.standard_normal(20_000)
        x = ref + 1e-6 * rng.standard_normal(ref.size)
        ratios.append(relative_error(fingerprint(x), fingerprint(ref)) / exact_rel(x, ref))
    assert abs(np.mean(ratios) - 1) < 0.03
    assert 0.025 < np.std(ratios) < 0.07


def test_differences_to_many_references_are_each_ones_within_the_slack():
    """``Sketches``: one NumPy pass over stacked sketches gives each reference's ``difference`` (relative,
    or absolute against an all-zero one) within ``SUM_SLACK``; NaN where a reference has no sketch."""
    rng = np.random.default_rng(0)
    refs = [fingerprint(rng.standard_normal((8, 64)).astype(np.float32) * s) for s in (1e-30, 1.0, 1e30)]
    refs.append(fingerprint(np.zeros((8, 64), np.float32)))
    refs.append(dataclasses.replace(refs[1], sketch=None))
    x = fingerprint(rng.standard_normal((8, 64)).astype(np.float32))
    near = Sketches(refs).differences(x)
    for got, ref in zip(near[:4], refs[:4], strict=True):
        want = difference(x, ref).value
        assert abs(got - want) <= SUM_SLACK * want
    assert np.isnan(near[4])
    assert np.isnan(Sketches(refs).differences(dataclasses.replace(x, sketch=None))).all()


@pytest.mark.parametrize("seed", range(4))
def test_within_decides_as_the_exact_difference_and_computes_it_only_near_the_limit(seed):
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(4096).astype(np.float32)
    x = fingerprint(ref * (1 + 1e-6 * rng.standard_normal(4096)).astype(np.float32))
    ref_fp = fingerprint(ref)
    (near,) = Sketches([ref_fp]).differences(x)
    exact = relative_error(x, ref_fp)
    calls = []

    def exactly() -> float:
        calls.append(1)
        return exact

    assert within(near, exact, exactly) and calls  # at the limit: decided by the exact value
    assert not within(near, np.nextafter(exact, 0.0), exactly)
    calls.clear()
    assert within(near, 2 * exact, exactly) and not within(near, exact / 2, exactly) and not calls
    assert not within(float("nan"), 1.0, exactly)


def test_a_difference_whose_sums_overflow_cannot_be_computed():
    """A float64 reference whose sum of squares overflowed (values past 1.3e154) would divide any distance
    down to 0: the difference is NaN, here and in ``Sketches``, so no limit takes it. Scaled down, the same
    difference is measured as ever."""
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(512) * 1e155
    near = ref * (1 + 1e-3 * rng.standard_normal(512))
    r, x = fingerprint(ref), fingerprint(near)
    assert r.sumsq == np.inf and np.isfinite(sketch_distance(x, r))  # the distance alone is finite
    assert np.isnan(difference(x, r).value)
    assert np.isnan(Sketches([r]).differences(x)).all()
    assert not within(Sketches([r]).differences(r)[0], 1.0, lambda: 0.0)
    check(near / 1e155, ref / 1e155)

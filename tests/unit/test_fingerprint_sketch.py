"""The sketch as an estimator of the relative L2 error between two tensors.

Run on the default backend (the suite runs once per backend)."""

from __future__ import annotations

import numpy as np
import pytest

from gate.fingerprint import fingerprint, relative_error, sketch_distance


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

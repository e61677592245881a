"""The torch-ops fingerprint (what CUDA tensors get) against the NumPy specification, on CPU tensors.

Counts, min/max and quantiles must be bit-identical; sums and sketch buckets may differ by the
stated bound of two float64 summation orders (``torch_ops.error_bound``), and are bit-identical
where every partial sum is exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gate.fingerprint as F
from gate.fingerprint import reference, torch_ops
from gate.fingerprint.torch_ops import error_bound, fingerprint_tensor
from tests.support.fingerprints import masked_at_max


def spec_of(t: torch.Tensor) -> F.Fingerprint:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return F.fingerprint(t.contiguous().view(torch.int16).numpy().view(np.uint16), dtype="bfloat16",
                             backend="numpy")
    return F.fingerprint(t.numpy(), backend="numpy")


def _finite_values(t: torch.Tensor) -> np.ndarray:
    v = t.detach().cpu().reshape(-1).to(torch.float64).numpy()
    return np.where(np.abs(v) < torch.finfo(t.dtype).max, v, 0.0)  # +-max counts as Inf


def _same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def assert_agrees(t: torch.Tensor, exact_sums: bool = False) -> F.Fingerprint:
    got, want = fingerprint_tensor(t), spec_of(t)
    assert (got.shape, got.dtype) == (tuple(want.shape), want.dtype)
    for k in ("count", "nan", "posinf", "neginf", "zero"):
        assert getattr(got, k) == getattr(want, k), k
    for k in ("min", "max"):
        assert _same_float(getattr(got, k), getattr(want, k)), (k, getattr(got, k), getattr(want, k))
    assert all(_same_float(a, b) for a, b in zip(got.quantiles, want.quantiles, strict=True)), \
        (got.quantiles, want.quantiles)
    if exact_sums:
        assert got == want  # every field, the sketch included, bit for bit
        return got
    n = want.count
    for k, magnitude in (("sum", want.sumabs), ("sumsq", want.sumsq), ("sumabs", want.sumabs)):
        a, b = getattr(got, k), getattr(want, k)
        if math.isfinite(magnitude):
            assert abs(a - b) <= error_bound(n, magnitude), (k, a, b, error_bound(n, magnitude))
    # each bucket against the magnitudes that enter it
    v = _finite_values(t)
    bucket, _ = reference.sketch_map(0, n) if n else (np.zeros(0, np.intp), None)
    mags = np.bincount(bucket, weights=np.abs(v), minlength=F.SKETCH_WIDTH)
    counts = np.bincount(bucket, minlength=F.SKETCH_WIDTH)
    if np.isfinite(mags).all():
        limits = [error_bound(int(c), m) for c, m in zip(counts, mags, strict=True)]
        assert (np.abs(got.sketch - want.sketch) <= limits).all()
    return got


FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def _special(x: torch.Tensor, seed: int) -> torch.Tensor:
    n = x.numel()
    g = torch.Generator().manual_seed(seed)
    for v in (math.nan, math.inf, -math.inf, 0.0, -0.0):
        x.view(-1)[torch.randint(0, n, (max(1, n // 500),), generator=g)] = v
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 1023, 65535, 65536, 65537, 262145])
def test_counts_and_order_statistics_exact_and_sums_within_the_bound(dtype, n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-3, 3, (n,), generator=g)
    assert_agrees(_special(x.to(dtype), n))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("make", [
    lambda n: torch.zeros(n),
    lambda n: torch.full((n,), 3.25),
    lambda n: torch.full((n,), math.nan),
    lambda n: torch.tensor([math.inf, -math.inf] * (n // 2)),
    lambda n: torch.tensor([math.nan, 1.5, math.inf] + [math.nan] * (n - 3)),  # one finite value
    lambda n: torch.randint(-3, 4, (n,)).float(),  # heavy ties
    lambda n: torch.relu(torch.randn(n)),  # half exact zeros, +0.0 and -0.0 alike
    lambda n: -torch.relu(torch.randn(n)),
], ids=["zeros", "constant", "all-nan", "only-inf", "one-finite", "ties", "relu", "neg-relu"])
def test_degenerate_tensors(dtype, make):
    assert_agrees(make(1001).to(dtype))


def test_float64_subnormals_and_float16_extremes():
    assert_agrees(torch.randn(5000, dtype=torch.float64) * 1e-310)
    assert_agrees(torch.tensor([65504.0, -65504.0, 6e-8, -6e-8, 0.0], dtype=torch.float16))


@pytest.mark.parametrize("dtype", FLOATS)
def test_largest_finite_value_counts_as_inf(dtype):
    raw = masked_at_max(np.random.default_rng(8), 70_001, str(dtype).removeprefix("torch."))
    x = torch.from_numpy(raw.view(np.int16)).view(dtype) if dtype == torch.bfloat16 else torch.from_numpy(raw)
    fp = assert_agrees(x)
    assert fp.posinf > 0 and fp.neginf > 0 and abs(fp.max) < torch.finfo(dtype).max


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (2, 3, 4, 5)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_shapes_zero_d_and_empty(shape, dtype):
    fp = assert_agrees(torch.randn(shape).to(dtype))
    assert fp.shape == shape and fp.count == math.prod(shape)


def test_strided_tensors_are_read_in_logical_order():
    x = torch.randn(64, 33, dtype=torch.float64)
    t = x.t()  # not contiguous: the sketch must see the transposed order
    fp = assert_agrees(t)
    assert fp.shape == (33, 64)
    assert F.relative_error(fp, fingerprint_tensor(x.t().contiguous())) < 1e-15
    assert F.relative_error(fp, fingerprint_tensor(x.reshape(33, 64))) > 0.5


def test_integer_valued_tensors_match_bit_for_bit_sketch_included():
    """Every partial sum is exact, so any order gives the specification's bits: the hash, the
    buckets and the signs must be the same."""
    g = torch.Generator().manual_seed(7)
    for dtype in FLOATS:
        x = torch.randint(-50, 51, (200_003,), generator=g).to(dtype)
        x[::997] = math.nan
        assert_agrees(x, exact_sums=True)


def test_group_hash_equals_the_specification_across_the_32_bit_boundary():
    for g0 in (0, 12345, 2**32 - 7, 2**40 + 3):
        want = reference.group_hash(g0, g0 + 4096).astype(np.int64)
        assert (torch_ops.group_hash(g0, g0 + 4096, torch.device("cpu")).numpy() == want).all()


@pytest.mark.parametrize("n", [63, 64, 65, 1000])
def test_many_chunks_give_the_same_fingerprint(monkeypatch, n):
    x = torch.randint(-9, 10, (n,)).float()
    x[5] = math.inf
    whole = fingerprint_tensor(x)
    monkeypatch.setattr(torch_ops, "CHUNK", 16)  # a multiple of 8, as the hash groups need
    assert fingerprint_tensor(x) == whole
    assert_agrees(x, exact_sums=True)


def test_a_tensor_larger_than_one_chunk():
    x = torch.randn(torch_ops.CHUNK + 13, generator=torch.Generator().manual_seed(3))
    x[-1] = math.nan
    assert_agrees(x)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from([np.float16, np.float32, np.float64]), bits=st.data(),
       shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=30))
def test_any_bit_pattern(dtype, bits, shape):
    # NaN payloads, +-Inf, -0.0, subnormals, the float16 extremes
    raw = bits.draw(hnp.arrays({np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dtype], shape))
    assert_agrees(torch.from_numpy(raw.view(dtype)))


@settings(max_examples=60, deadline=None)
@given(raw=hnp.arrays(np.int16, st.integers(0, 2000)))
def test_any_bfloat16_bit_pattern(raw):
    assert_agrees(torch.from_numpy(raw).view(torch.bfloat16))


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool, torch.complex64, torch.uint8])
def test_other_dtypes_are_refused_as_the_specification_does(dtype):
    with pytest.raises(TypeError, match="is not a supported floating dtype"):
        fingerprint_tensor(torch.zeros(3, dtype=dtype))


class _Producer:
    """A DLPack producer that is not a tensor (as an ONNX Runtime OrtValue or a CuPy array is)."""

    def __init__(self, t: torch.Tensor):
        self._t = t

    def __dlpack__(self, **kw):
        return self._t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_dlpack_producers_go_through_the_same_entry_point():
    a = np.random.default_rng(1).standard_normal((17, 9)).astype(np.float32)
    a[0, 0] = np.nan
    from_numpy = fingerprint_tensor(a)  # np.ndarray implements __dlpack__
    assert from_numpy == fingerprint_tensor(torch.from_numpy(a))
    assert from_numpy.quantiles == F.fingerprint(a, backend="numpy").quantiles
    t = torch.randn(4, 5, dtype=torch.float64)
    assert fingerprint_tensor(_Producer(t)) == fingerprint_tensor(t)
    with pytest.raises(TypeError, match="__dlpack__"):
        fingerprint_tensor([1.0, 2.0])


def test_error_bound_grows_with_the_terms_and_is_zero_for_one():
    assert error_bound(1, 5.0) == 0.0
    assert error_bound(2, 1.0) == pytest.approx(2 * 2.0**-53, rel=1e-12)
    assert error_bound(10**8, 1.0) == pytest.approx(2.2e-8, rel=0.02)

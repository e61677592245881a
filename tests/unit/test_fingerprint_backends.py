"""The native kernel against the NumPy specification: bit-identical fingerprints."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gate.fingerprint as F
from tests.support import tools
from tests.support.fingerprints import masked_at_max

native = tools.needs((F.native_error or "the native kernel is not built") if F._native_impl is None else None)


def both(x, **kw):
    a = F.fingerprint(x, backend="numpy", **kw)
    b = F.fingerprint(x, backend="native", **kw)
    return a, b


def assert_same(x, **kw):
    a, b = both(x, **kw)
    da, db = a.to_dict(), b.to_dict()
    assert a == b, {k: (da[k], db[k]) for k in da if da[k] != db[k] and k != "sketch"}


BITS = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}


@native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    bits=st.data(),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=40),
)
def test_any_bit_pattern_agrees(dtype, bits, shape):
    # every bit pattern: NaN payloads, +-Inf, -0.0, subnormals, float16 extremes
    raw = bits.draw(hnp.arrays(BITS[dtype], shape))
    assert_same(raw.view(dtype))


@native
@settings(max_examples=200, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(max_dims=2, max_side=300), elements=st.floats(width=32)))
def test_float_values_agree(x):
    assert_same(x)


@native
@settings(max_examples=100, deadline=None)
@given(raw=hnp.arrays(np.uint16, st.integers(0, 3000)))
def test_bfloat16_bits_agree(raw):
    assert_same(raw, dtype="bfloat16")


def _special(x, rng):
    n = x.size
    if n == 0:
        return x
    for v in (np.nan, np.inf, -np.inf, 0.0, -0.0):
        x.flat[rng.integers(0, n, max(1, n // 500))] = v
    return x


@native
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 1023, 1025, 8192, 8193, 65535, 65536, 65537, 262144, 262145, 2_500_003])
def test_sizes_across_chunk_block_and_path_boundaries(dtype, n):
    rng = np.random.default_rng(n)
    x = _special(rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n), rng)
    if dtype == "bfloat16":
        x = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        assert_same(x, dtype="bfloat16")
    else:
        assert_same(x.astype(dtype))


@native
@pytest.mark.parametrize(
    "make",
    [
        lambda r, n: np.maximum(r.standard_normal(n), 0),  # half exact zeros
        lambda r, n: np.full(n, 3.25),  # constant
        lambda r, n: np.full(n, np.nan),  # all NaN
        lambda r, n: 1.0 + r.standard_normal(n) * 1e-9,  # one 16-bit bin: refinement passes
        lambda r, n: r.integers(-3, 4, n).astype(float),  # heavy ties
        lambda r, n: r.standard_normal(n) * 1e-310,  # float64 subnormals
        lambda r, n: np.where(
            r.random(n) < 0.1, np.where(r.random(n) < 0.5, np.inf, -np.inf), r.random(n)
        ),  # mixed Inf
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hard_distributions(make, dtype):
    x = make(np.random.default_rng(1), 1_200_000).astype(dtype)
    assert_same(x)


@native
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("n", [1031, 8193, 70_001, 3_000_017])
def test_largest_finite_values_count_as_inf(dtype, n):
    """+-max beside the values just below it: counted as Inf, and skipped where a quantile pass meets it in
    the group of the largest ranked values (a collection, a heavy value: at 3M elements)."""
    x = masked_at_max(np.random.default_rng(n), n, dtype)
    assert_same(x, dtype="bfloat16" if dtype == "bfloat16" else None)


def _signed_zeros(r, n, share=0.6):
    """+0 and -0 (``share`` of the elements) among normal values: the quantile passes compare
    raw bit prefixes, where -0 looks like a tiny negative number and must still count as zero."""
    x = r.standard_normal(n)
    pick = r.random(n)
    x[pick < share / 2] = 0.0
    x[(pick >= share / 2) & (pick < share)] = -0.0
    return x


@native
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_signed_zeros_and_subnormals_in_the_quantile_passes(dtype):
    r = np.random.default_rng(5)
    x = _signed_zeros(r, 1_200_000).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    x[r.integers(0, x.size, 50_000)] = -tiny
    x[r.integers(0, x.size, 50_000)] = tiny
    assert_same(x)


@native
def test_many_quantiles_agree_with_the_order_statistics():
    """16 quantiles (the kernel's maximum) in 16 different bins, the median at zero: with
    -0's alias that is more raw prefixes than the float32 perfect hash has buckets, so the
    compare-chain path runs too."""
    from gate.fingerprint._kernel import ffi, lib

    r = np.random.default_rng(6)
    qs = [0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 0.999, 1.0]
    for dtype, code in (("float32", 2), ("float64", 3)):
        x = (_signed_zeros(r, 2_000_000, 0.05) * 10.0 ** r.integers(-4, 4, 2_000_000)).astype(dtype)
        for threads in (1, 2):
            out = ffi.new("pgfp_result *")
            assert lib.pgfp_fingerprint(ffi.from_buffer(x), x.size, code, ffi.new("double[]", qs), 16, threads, out) == 0
            ranks = [int(np.floor(q * (x.size - 1))) for q in qs]
            want = np.partition(x.astype(np.float64), ranks)[ranks] + 0.0
            assert list(ffi.unpack(out.q, 16)) == want.tolist(), (dtype, threads)


@native
def test_result_does_not_depend_on_thread_count():
    from gate.fingerprint._kernel import fingerprint_native

    x = np.random.default_rng(2).standard_normal(5_000_001).astype(np.float32)
    ref = fingerprint_native(x, "float32", threads=1)
    for t in (2, 3, 4):
        assert fingerprint_native(x, "float32", threads=t) == ref
    assert F.fingerprint(x, backend="numpy") == ref


@native
def test_concurrent_calls_match_serial_calls():
    rng = np.random.default_rng(3)
    xs = [
        rng.standard_normal(int(n)).astype(dt)
        for n, dt in zip(rng.integers(1, 400_000, 16), [np.float32, np.float64] * 8, strict=True)
    ]
    serial = [F.fingerprint(x, backend="native") for x in xs]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda x: F.fingerprint(x, backend="native"), xs)) == serial


@native
@pytest.mark.slow
def test_hundred_million_elements_agree():
    x = np.random.default_rng(4).standard_normal(100_000_000, dtype=np.float32)
    x[::1_000_003] = np.nan
    assert_same(x)


def _run(env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60)


def test_backend_env_var_forces_numpy():
    r = _run({"PARITY_GATE_BACKEND": "numpy"}, "import gate.fingerprint as F; print(F.backend)")
    assert r.stdout.strip() == "numpy", r.stderr


def test_unknown_backend_is_an_error_listing_valid_ones():
    r = _run({"PARITY_GATE_BACKEND": "fortran"}, "import gate.fingerprint")
    assert r.returncode != 0
    assert "PARITY_GATE_BACKEND='fortran' is not a fingerprint backend; valid: native, numpy" in r.stderr


@native
def test_kernel_threads_default_to_the_usable_cpus():
    code = (
        "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
        "from gate.fingerprint import _kernel; print(_kernel.THREADS)"
    )
    assert _run({"PARITY_GATE_THREADS": ""}, code).stdout.strip() == "1"
    want = str(min(8, len(os.sched_getaffinity(0))))
    r = _run({"PARITY_GATE_THREADS": ""}, "from gate.fingerprint import _kernel; print(_kernel.THREADS)")
    assert r.stdout.strip() == want, r.stderr
    r = _run({"PARITY_GATE_THREADS": "3"}, "from gate.fingerprint import _kernel; print(_kernel.THREADS)")
    assert r.stdout.strip() == "3", r.stderr
    # One rule for every reader of the variable (gate.env): the kernel, torch, ONNX Runtime.
    for bad in ("many", "0", "-2"):
        r = _run({"PARITY_GATE_THREADS": bad}, "from gate.fingerprint import _kernel")
        assert f"PARITY_GATE_THREADS={bad!r}: expected a positive integer" in r.stderr


@native
def test_default_backend_is_native_when_built():
    r = _run({"PARITY_GATE_BACKEND": ""}, "import gate.fingerprint as F; print(F.backend)")
    assert r.stdout.strip() == "native", r.stderr


@native
def test_the_kernel_names_its_code_path():
    import platform

    from gate.fingerprint import _kernel

    want = {"x86_64": {"avx2", "portable"}, "AMD64": {"avx2", "portable"}, "aarch64": {"neon"}, "arm64": {"neon"}}
    assert _kernel.VECTOR_PATH in want.get(platform.machine(), {"portable"})
    if platform.machine() == "x86_64" and "avx2" in open("/proc/cpuinfo").read():
        assert _kernel.VECTOR_PATH == "avx2"


@native
def test_timing_build_times_each_pass_and_changes_no_result(tmp_path):
    """PGFP_TIMING (scripts/bench_fingerprint.py): the kernel records each pass's time; the
    ordinary build records none."""
    from gate.fingerprint import _build, _kernel

    mod = _build.compile_variant(str(tmp_path), "PGFP_TIMING")
    x = (1.0 + np.random.default_rng(11).random(1_200_000) * 2.0**-10).astype(np.float32)  # refined once
    out = mod.ffi.new("pgfp_result *")
    qs = mod.ffi.new("double[]", list(F.QUANTILES))
    assert mod.lib.pgfp_fingerprint(mod.ffi.from_buffer(x), x.size, 2, qs, len(F.QUANTILES), 2, out) == 0
    ns = mod.ffi.new("double[]", 8)
    assert mod.lib.pgfp_timing(ns, 8) == mod.lib.PGFP_TIMING_FIELDS == 7
    assert ns[mod.lib.PGFP_TM_PASS1] > 0 and ns[mod.lib.PGFP_TM_REFINE] > 0 and ns[mod.lib.PGFP_TM_NREFINE] == 1
    assert ns[mod.lib.PGFP_TM_NPASS1] == 1
    assert list(mod.ffi.unpack(out.q, len(F.QUANTILES))) == list(F.fingerprint(x, backend="numpy").quantiles)
    # float64: normal data finishes its quantiles in one collection after pass 1 (its digit
    # window); 0.5% of outliers no sample sees puts the 0.999 rank past it: pass 1 again
    r = np.random.default_rng(12)
    normal = r.standard_normal(1_200_000)
    for x, passes in ((normal, 1), (np.where(r.random(normal.size) < 0.005, 1e300, normal), 2)):
        assert mod.lib.pgfp_fingerprint(mod.ffi.from_buffer(x), x.size, 3, qs, len(F.QUANTILES), 2, out) == 0
        assert mod.lib.pgfp_timing(ns, 8) == 7
        assert (ns[mod.lib.PGFP_TM_NPASS1], ns[mod.lib.PGFP_TM_NREFINE]) == (passes, 0)
        want = list(F.fingerprint(x, backend="numpy").quantiles)
        assert list(mod.ffi.unpack(out.q, len(F.QUANTILES))) == want
    assert _kernel.lib.pgfp_timing(_kernel.ffi.new("double[]", 8), 8) == 0


@native
def test_portable_c_path_agrees(tmp_path):
    """The portable code path (what CPUs without a vector path run), built with PGFP_NO_SIMD."""
    from gate.fingerprint import _build
    from gate.fingerprint._model import Fingerprint

    mod = _build.compile_variant(str(tmp_path), "PGFP_NO_SIMD")
    qs = mod.ffi.new("double[]", list(F.QUANTILES))
    codes = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}

    def portable(a, name):
        out = mod.ffi.new("pgfp_result *")
        rc = mod.lib.pgfp_fingerprint(
            mod.ffi.from_buffer(a) if a.size else mod.ffi.NULL, a.size, codes[name], qs, 9, 2, out
        )
        assert rc == 0
        return Fingerprint(
            shape=a.shape,
            dtype=name,
            quantiles=tuple(mod.ffi.unpack(out.q, 9)),
            sketch=np.array(mod.ffi.unpack(out.sketch, 256)),
            **{k: a.size if k == "count" else getattr(out, k) for k in F.STATS},
        )

    rng = np.random.default_rng(9)
    for n in (0, 1, 13, 4099, 70_001, 300_007, 2_200_001):
        x = _special(rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n), rng)
        for dtype in ("float16", "float32", "float64"):
            a = x.astype(dtype)
            assert portable(a, dtype) == F.fingerprint(a, backend="numpy")
        b = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        assert portable(b, "bfloat16") == F.fingerprint(b, dtype="bfloat16", backend="numpy")
    n = 2_200_001  # half zeros, and a group dominated by one value (heavy on the vector path)
    for x in (
        np.maximum(rng.standard_normal(n), 0),
        np.where(rng.random(n) < 0.7, 6.0, rng.standard_normal(n)),
    ):
        for dtype in ("float32", "float64"):
            assert portable(x.astype(dtype), dtype) == F.fingerprint(x.astype(dtype), backend="numpy")
    for dtype in ("float16", "bfloat16", "float32", "float64"):  # +-max counts as Inf
        x = masked_at_max(rng, n, dtype)
        hint = "bfloat16" if dtype == "bfloat16" else None
        assert portable(x, dtype) == F.fingerprint(x, dtype=hint, backend="numpy"), dtype

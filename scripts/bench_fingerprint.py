#!/usr/bin/env python3
"""Benchmark the fingerprint backends (not a test; figures go to docs/performance.md).

    PYTHONPATH=. python scripts/bench_fingerprint.py [--n 67108864] [--repeat 5]

Prints a Markdown table: best-of-N wall time (the fast rows timed round-robin, so host
contention hits them alike), throughput in GB/s of input, and the ratio to np.sum on the
same array, for the native kernel (1 thread and the default thread
count), the NumPy reference backend and a naive NumPy fingerprint of the same fields;
then the same for float32 data shaped like real activations (a ReLU output, a saturated
output, an additive attention mask), the cost per call on mid-size tensors, and on 1,000
tensors of 4,096 float32 elements.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import numpy as np

import gate.fingerprint as F
from gate.fingerprint import QUANTILES

CPU: dict[int, float] = {}


def best(fn, repeat: int) -> float:
    """Best-of-N wall time; the calling thread's CPU time of that run goes to CPU[id(fn)]."""
    return interleaved({"fn": fn}, repeat)["fn"]


def interleaved(fns: dict, repeat: int) -> dict:
    """Best-of-N wall time of each function, timed round-robin (one call of each per round),
    so a stretch of contention on a shared host hits every row alike rather than one row;
    each function's best CPU time of the calling thread goes to CPU[id(fn)]."""
    walls = {name: [] for name in fns}
    cpus = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(time.thread_time() - c0)
    for name, fn in fns.items():
        CPU[id(fn)] = min(cpus[name])
    return {name: min(w) for name, w in walls.items()}


def naive(x: np.ndarray) -> dict:
    """What one would write by hand: the same fields with plain NumPy calls."""
    fin = np.isfinite(x)
    v = x[fin].astype(np.float64)
    return {
        "nan": int(np.isnan(x).sum()),
        "posinf": int(np.isposinf(x).sum()),
        "neginf": int(np.isneginf(x).sum()),
        "zero": int((x == 0).sum()),
        "min": v.min(),
        "max": v.max(),
        "mean": v.mean(),
        "std": v.std(),
        "meanabs": np.abs(v).mean(),
        "q": np.quantile(v, QUANTILES),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64 * 2**20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-slow", action="store_true", help="skip the NumPy and naive rows")
    ap.add_argument(
        "--skip-portable", action="store_true", help="skip building and timing the portable C path"
    )
    args = ap.parse_args()
    from gate.fingerprint import _build, _kernel

    portable = None
    if not args.skip_portable:  # the path CPUs without AVX2 run: measures what runtime dispatch buys
        with tempfile.TemporaryDirectory() as tmp:
            portable = _build.compile_variant(tmp, "PGFP_NO_AVX2")
        p_qs = portable.ffi.new("double[]", list(QUANTILES))

    def run_portable(x: np.ndarray, threads: int) -> None:
        out = portable.ffi.new("pgfp_result *")
        code = {"float16": 0, "float32": 2, "float64": 3}[x.dtype.name]
        assert (
            portable.lib.pgfp_fingerprint(
                portable.ffi.from_buffer(x), x.size, code, p_qs, len(QUANTILES), threads, out
            )
            == 0
        )

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}; numpy {np.__version__}; default threads {_kernel.THREADS}"
    )
    rng = np.random.default_rng(0)
    print("\n| input | implementation | time (ms) | GB/s | x np.sum throughput |")
    print("| --- | --- | ---: | ---: | ---: |")
    for dtype in ("float32", "float16", "float64"):
        x = rng.standard_normal(args.n, dtype=np.float32).astype(dtype)
        f_sum = lambda x=x: np.sum(x)  # noqa: E731
        f_one = lambda x=x, d=dtype: _kernel.fingerprint_native(x, d, threads=1)  # noqa: E731
        fns = {
            "np.sum": f_sum,
            "native, 1 thread": f_one,
            "native, 2 threads": lambda x=x, d=dtype: _kernel.fingerprint_native(x, d, threads=2),
        }
        if portable is not None and dtype == "float32":
            for t in (1, 2):
                fns[f"portable C path (no AVX2), {t} thread(s)"] = lambda x=x, t=t: run_portable(x, t)
        rows = list(interleaved(fns, args.repeat).items())
        t_sum, c_sum, c_one = rows[0][1], CPU[id(f_sum)], CPU[id(f_one)]
        if not args.skip_slow and dtype == "float32":
            rows.append(("numpy backend (the spec)", best(lambda x=x: F.fingerprint(x, backend="numpy"), 1)))
            rows.append(
                (
                    "naive NumPy (isnan, min, max, mean, std, abs-mean, np.quantile)",
                    best(lambda x=x: naive(x), 1),
                )
            )
        for name, t in rows:
            print(
                f"| {args.n:,} {dtype} | {name} | {t * 1e3:.1f} | {x.nbytes / t / 1e9:.2f} | {t_sum / t:.2f} |"
            )
        print(
            f"| {args.n:,} {dtype} | same, CPU time of the calling thread: np.sum {c_sum * 1e3:.1f} ms, "
            f"native 1 thread {c_one * 1e3:.1f} ms | | | {c_sum / c_one:.2f} |"
        )
        if dtype == "float32":
            t_native = min(t for name, t in rows if name.startswith("native"))
            t_naive = dict(rows).get("naive NumPy (isnan, min, max, mean, std, abs-mean, np.quantile)")
            if t_naive:
                print(f"| | native vs naive NumPy | | | **{t_naive / t_native:.0f}x faster** |")
            for t in (1, 2):
                bound = _kernel.scratch_bound(args.n, dtype, t)
                print(f"| | native scratch memory bound, {t} thread(s) | {bound / 2**20:.1f} MiB | | |")
        del x

    # Activation-shaped float32 data: repeated values (zeros, a saturation level, a mask)
    # are where a histogram-based quantile search can fall off a cliff.
    shaped = {
        "ReLU output (half zeros)": lambda x: np.maximum(x, 0),
        "70% one value (ReLU6 at 6.0)": lambda x: np.where(rng.random(x.size) < 0.7, np.float32(6.0), x),
        "50% additive mask (-1e9)": lambda x: np.where(rng.random(x.size) < 0.5, np.float32(-1e9), x),
    }
    print(
        "\n| float32 input | np.sum (ms) | native, 1 thread (ms) | native, default threads (ms) | x np.sum |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, make in shaped.items():
        x = make(rng.standard_normal(args.n, dtype=np.float32)).astype(np.float32)
        t = interleaved(
            {
                "sum": lambda x=x: np.sum(x),
                "one": lambda x=x: _kernel.fingerprint_native(x, "float32", threads=1),
                "default": lambda x=x: _kernel.fingerprint_native(x, "float32"),
            },
            args.repeat,
        )
        t_sum, t_one, t_def = t["sum"], t["one"], t["default"]
        print(
            f"| {label} | {t_sum * 1e3:.1f} | {t_one * 1e3:.1f} | {t_def * 1e3:.1f} | {t_sum / t_def:.2f} |"
        )
        del x

    # Mid-size tensors, the bulk of a CNN's activations at batch 1 (default entry point).
    for size, count in ((65_536, 200), (262_144, 100), (1_048_576, 25)):
        xs = [np.maximum(rng.standard_normal(size, dtype=np.float32), 0) for _ in range(count)]
        t = best(lambda xs=xs: [F.fingerprint(x) for x in xs], args.repeat) / count
        print(
            f"\n{count} ReLU outputs x {size:,} float32: {t * 1e6:.0f} us per call "
            f"({size * 4 / t / 1e9:.2f} GB/s)",
            end="",
        )
    print()

    small = [rng.standard_normal(4096, dtype=np.float32) for _ in range(1000)]
    one = np.ones(1, np.float32)
    # the default entry point (fast path, no backend override), as the gate calls it
    calls = [("default backend (" + F.backend + ")", F.fingerprint)]
    if F.backend != "numpy":
        calls.append(("numpy backend", lambda a: F.fingerprint(a, backend="numpy")))
    for label, fp in calls:
        t_small = best(lambda fp=fp: [fp(a) for a in small], args.repeat) / 1000
        t_one = best(lambda fp=fp: [fp(one) for _ in range(1000)], args.repeat) / 1000
        print(
            f"\n{label}: 1,000 tensors x 4,096 float32: {t_small * 1e6:.1f} us per call "
            f"({4096 * 4 / t_small / 1e9:.2f} GB/s); a 1-element tensor: {t_one * 1e6:.2f} us per call "
            "(the per-call overhead)"
        )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark the fingerprint backends (not a test; figures go to the README).

    PYTHONPATH=. python scripts/bench_fingerprint.py [--n 67108864] [--repeat 5]

Prints a Markdown table: best-of-N wall time, throughput in GB/s of input, and the ratio
to np.sum on the same array, for the native kernel (1 thread and the default thread
count), the NumPy reference backend and a naive NumPy fingerprint of the same fields;
then the per-call cost on 1,000 tensors of 4,096 float32 elements.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import gate.fingerprint as F
from gate.fingerprint import QUANTILES


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


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
    args = ap.parse_args()
    from gate.fingerprint import _kernel

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}; numpy {np.__version__}; default threads {_kernel.THREADS}")
    rng = np.random.default_rng(0)
    print("\n| input | implementation | time (ms) | GB/s | x np.sum throughput |")
    print("| --- | --- | ---: | ---: | ---: |")
    for dtype in ("float32", "float16", "float64"):
        x = rng.standard_normal(args.n, dtype=np.float32).astype(dtype)
        t_sum = best(lambda x=x: np.sum(x), args.repeat)
        rows = [("np.sum", t_sum)]
        rows.append(("native, 1 thread", best(lambda x=x: _kernel.fingerprint_native(x, dtype, threads=1), args.repeat)))
        if _kernel.THREADS > 1:
            rows.append((f"native, {_kernel.THREADS} threads", best(lambda x=x: _kernel.fingerprint_native(x, dtype), args.repeat)))
        if not args.skip_slow and dtype == "float32":
            rows.append(("numpy backend (the spec)", best(lambda x=x: F.fingerprint(x, backend="numpy"), 1)))
            rows.append(("naive NumPy (isnan, min, max, mean, std, abs-mean, np.quantile)", best(lambda x=x: naive(x), 1)))
        for name, t in rows:
            print(f"| {args.n:,} {dtype} | {name} | {t * 1e3:.1f} | {x.nbytes / t / 1e9:.2f} | {t_sum / t:.2f} |")
        if dtype == "float32":
            t_native = min(t for name, t in rows if name.startswith("native"))
            t_naive = dict(rows).get("naive NumPy (isnan, min, max, mean, std, abs-mean, np.quantile)")
            if t_naive:
                print(f"| | native vs naive NumPy | | | **{t_naive / t_native:.0f}x faster** |")
            bound = _kernel.scratch_bound(args.n, dtype)
            print(f"| | native scratch memory bound | {bound / 2**20:.1f} MiB | | |")
        del x

    small = [rng.standard_normal(4096, dtype=np.float32) for _ in range(1000)]
    one = np.ones(1, np.float32)
    for name in ("native", "numpy"):
        if name == "native" and F._native_impl is None:
            continue
        t_small = best(lambda: [F.fingerprint(a, backend=name) for a in small], args.repeat) / 1000
        t_one = best(lambda: [F.fingerprint(one, backend=name) for _ in range(1000)], args.repeat) / 1000
        print(f"\n{name}: 1,000 tensors x 4,096 float32: {t_small * 1e6:.1f} us per call "
              f"({4096 * 4 / t_small / 1e9:.2f} GB/s); a 1-element tensor: {t_one * 1e6:.2f} us per call "
              "(the per-call overhead)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark the fingerprint backends (not a test; figures go to docs/performance.md).

    PYTHONPATH=. python scripts/bench_fingerprint.py [--n 67108864] [--repeat 5]

Prints the host (CPU model, load, date) and the kernel's code path (avx2, neon or portable), so
that figures from different hosts are never mixed up. Every row of a table is timed in the same
rounds, round-robin (one call of each row per round, the order rotating), so contention on a
shared host hits the rows alike and each round pairs them: times and GB/s are the best round, a
ratio is the median of the rounds' ratios with its range. Tables: np.sum, the native kernel (1
thread and the default count), the portable C path, the NumPy reference backend and a naive NumPy
fingerprint of the same fields (one thread, as NumPy runs them: compared with the kernel on one
thread and on the default count); float32 data shaped like real activations (a ReLU output, a
saturated output, an additive attention mask); the cost per call on mid-size, small and 1-element
tensors; where a second thread starts to pay, and the scratch memory bound; last, where one
thread's time goes, pass by pass (see pass_timings).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import numpy as np
from measure import Spread, host, own_cache

import gate.fingerprint as F
from gate.fingerprint import QUANTILES

CPU: dict[int, float] = {}
CODES = {"float16": 0, "float32": 2, "float64": 3}


def rounds(fns: dict, repeat: int) -> dict[str, list[float]]:
    """Wall time of each function in each of ``repeat`` rounds, timed round-robin (one call of each
    per round, the order rotating), so a stretch of contention on a shared host hits every row alike
    and each round pairs the rows; each function's best CPU time of the calling thread goes to
    CPU[id(fn)]."""
    names = list(fns)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeat):
        for name in names[r % len(names):] + names[: r % len(names)]:
            c0, t0 = time.thread_time(), time.perf_counter()
            fns[name]()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(time.thread_time() - c0)
    for name, fn in fns.items():
        CPU[id(fn)] = min(cpus[name])
    return walls


def best(fn, repeat: int) -> float:
    """Best-of-N wall time; the calling thread's CPU time of that run goes to CPU[id(fn)]."""
    return min(rounds({"fn": fn}, repeat)["fn"])


def raw_call(mod, x: np.ndarray, threads: int) -> bytes:
    """One call of a kernel build (``mod``: a cffi module) with exactly ``threads`` threads (the
    wrapper in gate.fingerprint uses one below 2^20 elements); the result struct's bytes."""
    out = mod.ffi.new("pgfp_result *")
    qs = mod.ffi.new("double[]", list(QUANTILES))
    rc = mod.lib.pgfp_fingerprint(mod.ffi.from_buffer(x), x.size, CODES[x.dtype.name], qs, len(QUANTILES), threads, out)
    assert rc == 0
    return bytes(mod.ffi.buffer(out))


PASSES = ("fused pass", "planning", "refinement", "collection", "select", "refinement passes", "fused passes")


def pass_timings(repeat: int, n: int) -> None:
    """One thread's nanoseconds per element in each pass, from builds with PGFP_TIMING (the
    kernel times its passes), and what the fused pass's histogram and sketch cost: builds
    that leave one out (PGFP_TIMING_NO_HIST / _NO_SKETCH) are timed round-robin with the
    whole one; 'rest' is the build without both (counts, min/max, the float64 lane sums)."""
    from gate.fingerprint import _build

    variants = {
        "all": ("PGFP_TIMING",),
        "no hist": ("PGFP_TIMING", "PGFP_TIMING_NO_HIST"),
        "no sketch": ("PGFP_TIMING", "PGFP_TIMING_NO_SKETCH"),
        "rest": ("PGFP_TIMING", "PGFP_TIMING_NO_HIST", "PGFP_TIMING_NO_SKETCH"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        mods = {k: _build.compile_variant(tmp, *d) for k, d in variants.items()}
    rng = np.random.default_rng(1)
    inputs = {
        "float32": rng.standard_normal(n, dtype=np.float32),
        "float32 ReLU output": np.maximum(rng.standard_normal(n, dtype=np.float32), 0),
        "float16": rng.standard_normal(n, dtype=np.float32).astype(np.float16),
        "float64": rng.standard_normal(n),
    }
    path = mods["all"].ffi.string(mods["all"].lib.pgfp_path()).decode()
    print(f"\nWhere the time goes: one thread, ns per element, best of {repeat} per pass ({path} path)\n")
    print(
        "| input | fused pass | its histogram | its sketch | rest of it | refinement (passes) "
        "| collection | select | planning |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, x in inputs.items():
        best_ns = {k: [float("inf")] * len(PASSES) for k in mods}
        for _ in range(repeat):
            for k, mod in mods.items():
                qs = mod.ffi.new("double[]", list(QUANTILES))
                out = mod.ffi.new("pgfp_result *")
                code = CODES[x.dtype.name]
                rc = mod.lib.pgfp_fingerprint(mod.ffi.from_buffer(x), x.size, code, qs, len(QUANTILES), 1, out)
                ns = mod.ffi.new("double[]", len(PASSES))
                assert rc == 0 and mod.lib.pgfp_timing(ns, len(PASSES)) == len(PASSES)
                best_ns[k] = [min(a, b) for a, b in zip(best_ns[k], ns, strict=True)]
        t = {k: [v / x.size for v in ns] for k, ns in best_ns.items()}
        fused = t["all"][0]
        print(
            f"| {x.size:,} {label} | {fused:.2f} | {fused - t['no hist'][0]:.2f} | {fused - t['no sketch'][0]:.2f} "
            f"| {t['rest'][0]:.2f} | {t['all'][2]:.2f} ({best_ns['all'][5]:.0f}) | {t['all'][3]:.2f} "
            f"| {t['all'][4]:.2f} | {t['all'][1]:.2f} |"
        )
        del x


def compare_with(root: str, n: int, repeat: int) -> None:
    """Another version of the kernel (a checkout at root, e.g. `git worktree add /tmp/old main`)
    against this one: both built here, timed round-robin on the same arrays (a stretch of
    contention hits both alike; the first of a round alternates), results checked equal;
    best time, and the median of the ratios of paired calls. One thread: CPU time of the
    calling thread (the kernel runs there), so time spent descheduled on a busy host does
    not count; two threads: wall time."""
    import importlib.util

    def load(path: str, name: str):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gate", "fingerprint")
    with tempfile.TemporaryDirectory() as tmp:
        mods = {}
        for label, src in (("other", os.path.join(root, "gate", "fingerprint")), ("this", here)):
            ffi = load(os.path.join(src, "_build.py"), f"_build_{label}").make_ffi(os.path.abspath, f"_pgfp_{label}")
            mods[label] = load(ffi.compile(tmpdir=os.path.join(tmp, label)), f"_pgfp_{label}")
    rng = np.random.default_rng(0)
    x32 = rng.standard_normal(n, dtype=np.float32)
    inputs = {
        "float32": x32,
        "float32 ReLU output": np.maximum(x32, 0),
        "float32 70% one value": np.where(rng.random(n) < 0.7, np.float32(6.0), x32),
        "float64": rng.standard_normal(n),
        "float16": x32.astype(np.float16),
    }
    print(f"this kernel against {root}: {n:,} elements, {repeat} round-robin rounds\n")
    print("| input | threads | other (ms) | this (ms) | this / other, best | this / other, median of pairs (range) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, x in inputs.items():
        for threads in (1, 2):
            t: dict[str, list[float]] = {"other": [], "this": []}
            clock = time.thread_time if threads == 1 else time.perf_counter
            for r in range(repeat):
                res = {}
                for k in ("other", "this") if r % 2 == 0 else ("this", "other"):
                    t0 = clock()
                    res[k] = raw_call(mods[k], x, threads)
                    t[k].append(clock() - t0)
                assert res["other"] == res["this"], f"{label}: the two kernels disagree"
            ratio = Spread.of(t["this"], t["other"])
            o, h = min(t["other"]), min(t["this"])
            print(f"| {label} | {threads} | {o * 1e3:.1f} | {h * 1e3:.1f} | {h / o:.3f} | {ratio.fmt(3, '')} |")


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



NAIVE = "naive NumPy (isnan, min, max, mean, std, abs-mean, np.quantile)"


def main_table(n: int, repeat: int, portable, slow: bool) -> None:
    """Per dtype, every row timed in the same rounds; a ratio to np.sum is the median of the
    rounds' ratios (range). NumPy's calls here run on one thread, so the naive fingerprint is
    compared with the kernel on one thread, and also with the kernel's default thread count."""
    from gate.fingerprint import _kernel

    rng = np.random.default_rng(0)
    print(f"\n{repeat} rounds per row; time and GB/s: the best round; ratios: median of the rounds (range)\n")
    print("| input | implementation | time (ms) | GB/s | x np.sum throughput |")
    print("| --- | --- | ---: | ---: | ---: |")
    for dtype in ("float32", "float16", "float64"):
        x = rng.standard_normal(n, dtype=np.float32).astype(dtype)
        fns = {"np.sum": lambda x=x: np.sum(x),
               "native, 1 thread": lambda x=x, d=dtype: _kernel.fingerprint_native(x, d, threads=1),
               f"native, {_kernel.THREADS} threads (the default here)":
                   lambda x=x, d=dtype: _kernel.fingerprint_native(x, d)}
        if portable is not None and dtype == "float32":
            for t in (1, _kernel.THREADS):
                fns[f"portable C path (no SIMD), {t} thread(s)"] = lambda x=x, t=t: raw_call(portable, x, t)
        if slow and dtype == "float32":
            fns["numpy backend (the spec)"] = lambda x=x: F.fingerprint(x, backend="numpy")
            fns[NAIVE] = lambda x=x: naive(x)
        walls = rounds(fns, repeat)
        one, default = list(walls)[1:3]
        for name, w in walls.items():
            spread = Spread.of(walls["np.sum"], w)
            ratio = "1 (the reference)" if name == "np.sum" else spread.fmt(2 if spread.median >= 0.1 else 4)
            print(f"| {n:,} {dtype} | {name} | {min(w) * 1e3:.1f} | {x.nbytes / min(w) / 1e9:.2f} | {ratio} |")
        c_sum, c_one = CPU[id(fns["np.sum"])], CPU[id(fns[one])]
        print(f"| {n:,} {dtype} | same, CPU time of the calling thread: np.sum {c_sum * 1e3:.1f} ms, "
              f"native 1 thread {c_one * 1e3:.1f} ms | | | {c_sum / c_one:.2f} |")
        if dtype == "float32" and portable is not None:
            print(f"| | vector path ({_kernel.VECTOR_PATH}) vs portable C path, 1 thread | | | "
                  f"{Spread.of(walls['portable C path (no SIMD), 1 thread(s)'], walls[one]).fmt()} faster |")
        if NAIVE in walls:
            print(f"| | native vs naive NumPy, both 1 thread | | | **{Spread.of(walls[NAIVE], walls[one]).fmt(0)} faster** |")
            print(f"| | native with {_kernel.THREADS} threads vs naive NumPy (1 thread) | | | "
                  f"**{Spread.of(walls[NAIVE], walls[default]).fmt(0)} faster** |")
        del x


def shaped_table(n: int, repeat: int) -> None:
    """Activation-shaped float32 data: repeated values (zeros, a saturation level, a mask) are where
    a histogram-based quantile search can fall off a cliff."""
    from gate.fingerprint import _kernel

    rng = np.random.default_rng(0)
    shaped = {
        "ReLU output (half zeros)": lambda x: np.maximum(x, 0),
        "70% one value (ReLU6 at 6.0)": lambda x: np.where(rng.random(x.size) < 0.7, np.float32(6.0), x),
        "50% additive mask (-1e9)": lambda x: np.where(rng.random(x.size) < 0.5, np.float32(-1e9), x),
    }
    print(f"\n| {n:,} float32 | np.sum (ms) | native, 1 thread (ms) | native, {_kernel.THREADS} threads (ms) "
          "| x np.sum, default threads |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, make in shaped.items():
        x = make(rng.standard_normal(n, dtype=np.float32)).astype(np.float32)
        w = rounds({"sum": lambda x=x: np.sum(x),
                    "one": lambda x=x: _kernel.fingerprint_native(x, "float32", threads=1),
                    "default": lambda x=x: _kernel.fingerprint_native(x, "float32")}, repeat)
        print(f"| {label} | {min(w['sum']) * 1e3:.1f} | {min(w['one']) * 1e3:.1f} | {min(w['default']) * 1e3:.1f} "
              f"| {Spread.of(w['sum'], w['default']).fmt()} |")
        del x


def per_call(repeat: int) -> None:
    """Mid-size tensors (the bulk of a CNN's activations at batch 1), small ones, and one element:
    the per-call overhead, through the gate's entry point."""
    rng = np.random.default_rng(0)
    for size, count in ((65_536, 200), (262_144, 100), (1_048_576, 25)):
        xs = [np.maximum(rng.standard_normal(size, dtype=np.float32), 0) for _ in range(count)]
        t = best(lambda xs=xs: [F.fingerprint(x) for x in xs], repeat) / count
        print(f"\n{count} ReLU outputs x {size:,} float32: {t * 1e6:.0f} us per call ({size * 4 / t / 1e9:.2f} GB/s)",
              end="")
    print()
    small = [rng.standard_normal(4096, dtype=np.float32) for _ in range(1000)]
    one = np.ones(1, np.float32)
    calls = [("default backend (" + F.backend + ")", F.fingerprint)]
    if F.backend != "numpy":
        calls.append(("numpy backend", lambda a: F.fingerprint(a, backend="numpy")))
    for label, fp in calls:
        t_small = best(lambda fp=fp: [fp(a) for a in small], repeat) / 1000
        t_one = best(lambda fp=fp: [fp(one) for _ in range(1000)], repeat) / 1000
        print(f"\n{label}: 1,000 tensors x 4,096 float32: {t_small * 1e6:.1f} us per call "
              f"({4096 * 4 / t_small / 1e9:.2f} GB/s); a 1-element tensor: {t_one * 1e6:.2f} us per call "
              "(the per-call overhead)")


def threads_and_scratch(repeat: int) -> None:
    """Where a second thread starts to pay (the wrapper splits from 2^20 elements on), and the
    kernel's scratch memory bound (gate.fingerprint._kernel.scratch_bound)."""
    from gate.fingerprint import _kernel

    if _kernel.THREADS > 1:
        rng = np.random.default_rng(0)
        t = _kernel.THREADS
        print(f"\n| float32 elements | 1 thread (us) | {t} threads (us) | 1 thread / {t} threads |")
        print("| ---: | ---: | ---: | ---: |")
        for log2 in range(16, 22):
            x = rng.standard_normal(1 << log2, dtype=np.float32)
            calls = max(1, (1 << 24) >> log2)  # ~16M elements per timed call
            w = rounds({k: lambda x=x, k=k, c=calls: [raw_call(_kernel, x, k) for _ in range(c)] for k in (1, t)},
                       max(repeat, 5))
            print(f"| 2^{log2} | {min(w[1]) / calls * 1e6:.0f} | {min(w[t]) / calls * 1e6:.0f} "
                  f"| {Spread.of(w[1], w[t]).fmt()} |")
    print("\n| scratch memory bound | 1 thread | 2 threads | 8 threads |")
    print("| --- | ---: | ---: | ---: |")
    for dtype, n in (("float32", 1 << 26), ("float64", 1 << 26), ("float32", 1 << 31)):
        cells = " | ".join(f"{_kernel.scratch_bound(n, dtype, t) / 2**20:.1f} MiB" for t in (1, 2, 8))
        print(f"| {dtype}, 2^{n.bit_length() - 1} elements | {cells} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64 * 2**20)
    ap.add_argument("--repeat", type=int, default=5, help="rounds per row (>= 3 to publish)")
    ap.add_argument("--skip-slow", action="store_true", help="skip the NumPy and naive rows")
    ap.add_argument("--skip-portable", action="store_true", help="skip building and timing the portable C path")
    ap.add_argument("--skip-timing", action="store_true", help="skip the per-pass timing (instrumented builds)")
    ap.add_argument("--compare-with", metavar="CHECKOUT", help="only time another checkout's kernel against this one")
    args = ap.parse_args()
    own_cache()  # never the user's store
    print(host("numpy"))
    if args.compare_with:
        compare_with(args.compare_with, args.n, args.repeat)
        return
    from gate.fingerprint import _build, _kernel

    portable = None
    if not args.skip_portable:  # the path CPUs without a vector path run: what the vector path buys
        with tempfile.TemporaryDirectory() as tmp:
            portable = _build.compile_variant(tmp, "PGFP_NO_SIMD")
    print(f"kernel code path: {_kernel.VECTOR_PATH}; default threads {_kernel.THREADS} ({platform.machine()})")
    main_table(args.n, args.repeat, portable, not args.skip_slow)
    shaped_table(args.n, args.repeat)
    per_call(args.repeat)
    threads_and_scratch(args.repeat)
    if not args.skip_timing:
        pass_timings(args.repeat, args.n)


if __name__ == "__main__":
    main()

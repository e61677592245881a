#!/usr/bin/env python3
"""Benchmark the fingerprint backends (not a test; figures go to docs/performance.md).

    PYTHONPATH=. python scripts/bench_fingerprint.py [--n 67108864] [--repeat 5]

Prints the CPU model and the kernel's code path (avx2, neon or portable), so that figures
from different hosts are never mixed up; then a Markdown table: best-of-N wall time (the
fast rows timed round-robin, so host contention hits them alike), throughput in GB/s of
input, and the ratio to np.sum on the same array, for the native kernel (1 thread and the
default thread count), the NumPy reference backend and a naive NumPy fingerprint of the
same fields; then the same for float32 data shaped like real activations (a ReLU output, a
saturated output, an additive attention mask), the cost per call on mid-size tensors, and
on 1,000 tensors of 4,096 float32 elements; last, where one thread's time goes, pass by
pass (see pass_timings).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
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


def cpu_model() -> str:
    """The CPU as /proc/cpuinfo (or macOS sysctl) names it, with what tells models apart:
    x86 family/model/stepping and AVX-512, or the Arm implementer and part numbers."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if "model name" in fields:
        flags = fields.get("flags", "").split()
        isa = ", ".join(f"{'' if x in flags else 'no '}{x}" for x in ("avx2", "avx512f"))
        return (
            f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}, "
            f"stepping {fields.get('stepping', '?')}; {isa})"
        )
    if "CPU part" in fields:  # Linux on Arm names no model: implementer 0x41 = Arm, part 0xd0c = Neoverse N1 ...
        return f"Arm CPU (implementer {fields.get('CPU implementer', '?')}, part {fields['CPU part']})"
    try:
        brand = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except OSError:
        brand = ""
    return brand or platform.processor() or platform.machine()


PASSES = ("fused pass", "planning", "refinement", "collection", "select", "refinement passes")


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
    codes = {"float16": 0, "float32": 2, "float64": 3}
    for label, x in inputs.items():
        best_ns = {k: [float("inf")] * len(PASSES) for k in mods}
        for _ in range(repeat):
            for k, mod in mods.items():
                qs = mod.ffi.new("double[]", list(QUANTILES))
                out = mod.ffi.new("pgfp_result *")
                code = codes[x.dtype.name]
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
    codes = {"float16": 0, "float32": 2, "float64": 3}

    def call(mod, x, threads):
        out = mod.ffi.new("pgfp_result *")
        qs = mod.ffi.new("double[]", list(QUANTILES))
        assert mod.lib.pgfp_fingerprint(mod.ffi.from_buffer(x), x.size, codes[x.dtype.name], qs, len(QUANTILES), threads, out) == 0
        return bytes(mod.ffi.buffer(out))

    print(f"this kernel against {root}: {n:,} elements, {repeat} round-robin rounds\n")
    print("| input | threads | other (ms) | this (ms) | this / other, best | this / other, median of pairs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, x in inputs.items():
        for threads in (1, 2):
            t: dict[str, list[float]] = {"other": [], "this": []}
            clock = time.thread_time if threads == 1 else time.perf_counter
            for r in range(repeat):
                res = {}
                for k in ("other", "this") if r % 2 == 0 else ("this", "other"):
                    t0 = clock()
                    res[k] = call(mods[k], x, threads)
                    t[k].append(clock() - t0)
                assert res["other"] == res["this"], f"{label}: the two kernels disagree"
            pairs = sorted(b / a for a, b in zip(t["other"], t["this"], strict=True))
            o, h = min(t["other"]), min(t["this"])
            print(f"| {label} | {threads} | {o * 1e3:.1f} | {h * 1e3:.1f} | {h / o:.3f} | {pairs[len(pairs) // 2]:.3f} |")


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
    ap.add_argument("--skip-timing", action="store_true", help="skip the per-pass timing (instrumented builds)")
    ap.add_argument(
        "--compare-with", metavar="CHECKOUT", help="only time another checkout's kernel against this one"
    )
    args = ap.parse_args()
    if args.compare_with:
        compare_with(args.compare_with, args.n, args.repeat)
        return
    from gate.fingerprint import _build, _kernel

    portable = None
    if not args.skip_portable:  # the path CPUs without a vector path run: what the vector path buys
        with tempfile.TemporaryDirectory() as tmp:
            portable = _build.compile_variant(tmp, "PGFP_NO_SIMD")
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

    print(f"cpu: {cpu_model()}, {os.cpu_count()} CPUs ({platform.machine()})")
    print(
        f"kernel code path: {_kernel.VECTOR_PATH}; default threads {_kernel.THREADS}; "
        f"load average {os.getloadavg()[0]:.2f}; numpy {np.__version__}"
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
                fns[f"portable C path (no SIMD), {t} thread(s)"] = lambda x=x, t=t: run_portable(x, t)
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

    if not args.skip_timing:
        pass_timings(args.repeat, args.n)


if __name__ == "__main__":
    main()

"""The kernel's NEON path (aarch64) under emulation: cross-compiled with aarch64-linux-gnu-gcc
and run under qemu-user, on data shaped to reach every path (sizes across the small-input,
chunk, block and thread thresholds; every dtype; NaN, +-Inf, -0.0, subnormals, half zeros,
a dominant value, constants, values that force refinement passes), at 1, 2 and 3 threads.
Its results must equal the NumPy specification bit for bit, as must the portable path
built for the same CPU. tests/native/stress.c also runs there (thread counts agree).

Needs `qemu-user`, `gcc-aarch64-linux-gnu` and `libc6-dev-arm64-cross` (scripts/test.sh
installs them, with sudo where it is not root); skips without them, fails without them under
PARITY_GATE_REQUIRE_TOOLS=1 (CI). Emulation proves correctness, not speed.
"""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

import gate.fingerprint as F
from gate.fingerprint import QUANTILES, _build
from gate.fingerprint.reference import fingerprint_numpy
from tests.support import tools
from tests.support.fingerprints import masked_at_max

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(os.path.dirname(HERE), "native")
CROSS = shutil.which(os.environ.get("PARITY_GATE_AARCH64_CC", "aarch64-linux-gnu-gcc"))
QEMU = shutil.which("qemu-aarch64")

pytestmark = [
    pytest.mark.skipif(F.backend != "native", reason="tests the C kernel: runs in the native pass"),
    tools.needs(
        None if CROSS and QEMU else "needs aarch64-linux-gnu-gcc and qemu-aarch64 (apt-get install qemu-user "
        "gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"
    ),
]

CODES = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}
SMALL, LARGE = 1 << 13, 1_200_007  # the small-input path's limit; past 2^20 (threads, refinement)
# pgfp_result: the counts but "count", then the float statistics, in the order of STATS
COUNTS = [k for k, kind in F.STATS.items() if kind == "count" and k != "count"]
FIELDS = [k for k, kind in F.STATS.items() if kind != "count"]
RESULT = np.dtype(
    [("rc", "<i4"), ("pad", "<i4"), ("counts", "<u8", len(COUNTS)), ("floats", "<f8", len(FIELDS)),
     ("q", "<f8", 16), ("sketch", "<f8", 256)]
)  # fmt: skip
MANY_QS = (0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 0.999, 1.0)


def _cross_compile(tmp: str, variant: str, *defines: str) -> subprocess.Popen:
    """Start compiling the kernel's sources for aarch64 into tmp/variant, with its own flags."""
    out = os.path.join(tmp, variant)
    os.makedirs(out)
    srcs = [os.path.join(_build.SRC, f) for f in _build.SOURCES]
    cmd = [CROSS, *_build._compile_args(), *(f"-D{d}" for d in defines), f"-I{_build.SRC}", "-c", *srcs]
    return subprocess.Popen(cmd, cwd=out, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _link(tmp: str, variant: str, main: str) -> str:
    """A static executable (qemu-user needs no aarch64 libraries then) of main and the kernel."""
    exe = os.path.join(tmp, f"{main[:-2]}-{variant}")
    objs = [os.path.join(tmp, variant, f[:-2] + ".o") for f in _build.SOURCES]
    cmd = [CROSS, *_build._compile_args(), "-static", f"-I{_build.SRC}", "-o", exe, os.path.join(NATIVE, main), *objs]
    r = subprocess.run([*cmd, "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("aarch64"))
    jobs = {"neon": _cross_compile(tmp, "neon"), "portable": _cross_compile(tmp, "portable", "PGFP_NO_SIMD")}
    for job in jobs.values():
        _, err = job.communicate(timeout=600)
        if job.returncode and "No such file or directory" in err and "#include" in err:
            tools.missing(f"no aarch64 C library headers (apt-get install libc6-dev-arm64-cross): {err.strip()[:200]}")
        assert job.returncode == 0, err
    return {
        "neon": _link(tmp, "neon", "run_cases.c"),
        "portable": _link(tmp, "portable", "run_cases.c"),
        "stress": _link(tmp, "neon", "stress.c"),
    }


def _bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """The kernel's input: bfloat16 as the upper half of float32 bits."""
    if dtype == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(dtype)


def _distributions(r: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """float64 data for every kind of input the kernel treats differently."""
    dense = r.standard_normal(n) * 10.0 ** r.integers(-3, 3, n)
    special = dense.copy()
    for v in (np.nan, np.inf, -np.inf, 0.0, -0.0) if n else ():
        special[r.integers(0, n, max(1, n // 50))] = v
    pick = r.random(n)
    return {
        "special values": special,
        "ReLU, signed zeros": np.where(pick < 0.45, 0.0, np.where(pick < 0.5, -0.0, np.abs(dense))),
        "constant": np.full(n, 3.25),
        "70% one value": np.where(pick < 0.7, 6.0, dense),
        "one 16-bit bin": 1.0 + r.random(n) * 2.0**-10,
        "subnormals": np.where(pick < 0.4, 0.0, np.where(pick < 0.7, 1e-310, 1e-42) * r.standard_normal(n)),
        "mostly non-finite": np.where(pick < 0.3, -np.inf, np.where(pick < 0.35, np.nan, dense)),
        "few values": r.integers(-3, 4, n).astype(float),
        "float64 overflow": np.where(pick < 0.5, 1.7e308, -1.7e308) * r.random(n),
        "past float64's digit window": np.where(
            pick < 0.005, 1e300, np.where(pick < 0.6, 1e-300, 1.0) * dense
        ),
    }


def _cases():
    """(label, dtype, array, quantiles, thread counts)."""
    r = np.random.default_rng(17)
    out = []
    for n in (0, 1, 7, 8, 13, 512, 513, 1031, SMALL, SMALL + 1, 65_537, 140_003):
        threads = (1,) if n <= SMALL else (1, 2, 3) if n < 100_000 else (1, 3)  # small inputs: one thread
        for dist, x in _distributions(r, n).items():
            for dtype in CODES:
                out.append((f"{dist}, n={n}", dtype, _bits(x, dtype), QUANTILES, threads))
        for dtype, bits in (("float16", np.uint16), ("bfloat16", np.uint16), ("float32", np.uint32), ("float64", np.uint64)):
            raw = r.integers(0, np.iinfo(bits).max, n, dtype=bits, endpoint=True)  # every bit pattern
            out.append((f"random bits, n={n}", dtype, raw if dtype == "bfloat16" else raw.view(dtype), QUANTILES, threads))
            masked = masked_at_max(r, n, dtype)
            out.append((f"+-max (counted as Inf), n={n}", dtype, masked, QUANTILES, threads))
    big = _distributions(r, LARGE)  # refinement passes, heavy values, 18+ blocks over threads
    big["one 28-bit bin"] = 1.0 + r.random(LARGE) * 2.0**-30
    for dist, dtype, threads in (
        ("special values", "float32", (1, 2, 3)),
        ("special values", "float64", (1, 2, 3)),
        ("ReLU, signed zeros", "float64", (1, 3)),
        ("70% one value", "float32", (1, 3)),
        ("one 16-bit bin", "float32", (1, 2)),
        ("one 16-bit bin", "float64", (1, 2)),
        ("one 28-bit bin", "float64", (1, 2)),  # refined twice: 40-bit prefixes, no perfect hash
    ):
        out.append((f"{dist}, n={LARGE}", dtype, _bits(big[dist], dtype), QUANTILES, threads))
    n = 3_000_017  # +-max among the largest values: a heavy value there must not be the mask
    out.append((f"+-max, n={n}", "float64", masked_at_max(r, n, "float64"), QUANTILES, (1, 2)))
    x = big["special values"] * np.where(r.random(LARGE) < 0.05, 0.0, 1.0)
    out.append((f"16 quantiles (the most a call takes), n={LARGE}", "float32", x.astype(np.float32), MANY_QS, (1, 3)))
    return out


@pytest.fixture(scope="module")
def cases():
    """The cases and what the specification says of each: (counts, float bits)."""
    with np.errstate(over="ignore", invalid="ignore"):
        made = _cases()
    return [(c, _expected(c[2], c[1], c[3])) for c in made]


def _write_cases(path: str, cases) -> None:
    with open(path, "wb") as f:
        for _, dtype, a, qs, threads in cases:
            nt = len(threads)
            f.write(struct.pack("<4IQ", CODES[dtype], len(qs), nt, 0, a.size))
            f.write(struct.pack(f"<{len(qs)}d", *qs))
            f.write(struct.pack(f"<{nt + nt % 2}i", *threads, *([0] * (nt % 2))))
            f.write(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())


def _canonical(v) -> list[int]:
    """float64 bits; NaN as one pattern: a NaN that arithmetic produces (inf + -inf in an
    overflowing sum) has the CPU's default payload, 0x7ff8... on Arm, 0xfff8... on x86, in
    the NumPy specification as in the kernel."""
    return [0x7FF8000000000000 if math.isnan(x) else struct.unpack("<Q", struct.pack("<d", x))[0] for x in v]


def _expected(a: np.ndarray, dtype: str, qs) -> tuple[list[int], list[int]]:
    """(counts, float bits) per the specification; other quantiles as its order statistics."""
    fp = fingerprint_numpy(a, dtype)
    q = list(fp.quantiles)
    if tuple(qs) != QUANTILES:
        v = a.astype(np.float64)
        v = v[np.isfinite(v)]
        ranks = [int(math.floor(p * float(v.size - 1))) for p in qs]
        q = (np.partition(v, ranks)[ranks] + 0.0).tolist() if v.size else [math.nan] * len(qs)
    floats = [*(getattr(fp, k) for k in FIELDS), *q, *fp.sketch.tolist()]
    return [getattr(fp, k) for k in COUNTS], _canonical(floats)


def _run(tmp_path, exe: str, cases) -> tuple[str, np.ndarray]:
    src, dst = str(tmp_path / "cases.bin"), str(tmp_path / "results.bin")
    _write_cases(src, cases)
    r = subprocess.run([QEMU, exe, src, dst], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()[0], np.fromfile(dst, RESULT)


def _differences(got: list[int], want: list[int], nq: int) -> list[str]:
    names = [*FIELDS, *(["quantiles"] * nq), *(["sketch"] * 256)]
    return sorted({names[i] for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b})


@pytest.mark.parametrize("path", ["neon", "portable"])
def test_path_matches_the_specification_bit_for_bit(tmp_path, binaries, cases, path):
    ran, results = _run(tmp_path, binaries[path], [c for c, _ in cases])
    assert ran == f"path: {path}"
    assert results.size == sum(len(c[4]) for c, _ in cases)
    i, bad = 0, []
    for (label, dtype, _, qs, threads), (counts, floats) in cases:
        for t in threads:
            res = results[i]
            i += 1
            got = _canonical([*res["floats"], *res["q"][: len(qs)], *res["sketch"]])
            if res["rc"] != 0 or res["counts"].tolist() != counts or got != floats:
                what = _differences(got, floats, len(qs)) + (["counts"] if res["counts"].tolist() != counts else [])
                bad.append(f"{label} {dtype} threads={t}: rc {res['rc']}, differ: {', '.join(what)}")
    assert not bad, f"{len(bad)} mismatches: " + "; ".join(bad[:10])


def test_stress_harness_threads_agree_on_the_neon_path(binaries):
    r = subprocess.run([QEMU, binaries["stress"], "65537"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "all equal to one thread" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]

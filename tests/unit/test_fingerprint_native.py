"""The C kernel under sanitizers: tests/native/stress.c runs it on data built to reach
every code path, at every dtype, at sizes across its thresholds, and checks that 2, 3 and
5 threads give the one-thread result bit for bit (the x86 paths here; the NEON path runs
under emulation in test_fingerprint_neon.py, without sanitizers). AddressSanitizer + UBSan catch reads
and writes out of bounds (the vector paths write whole vectors) and undefined arithmetic;
ThreadSanitizer catches data races between the kernel's threads, whatever the timing.

These test the C code only, so they run in the native pass of scripts/test.sh.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import gate.fingerprint as F
from gate.fingerprint import _build
from tests.support import tools

HERE = os.path.dirname(os.path.abspath(__file__))
STRESS = os.path.join(os.path.dirname(HERE), "native", "stress.c")
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")

pytestmark = [
    pytest.mark.skipif(F.backend != "native", reason="tests the C kernel: runs in the native pass"),
    pytest.mark.skipif(os.name != "posix", reason="builds with POSIX tools"),
    tools.needs(None if CC else "needs a C compiler (cc or gcc, or CC)"),
]


def build(tmp_path, sanitize: str, *defines: str) -> str:
    exe = str(tmp_path / f"stress-{sanitize.replace(',', '-')}")
    srcs = [os.path.join(_build.SRC, f) for f in _build.SOURCES]
    # the kernel's own flags (summation order, no FMA), then a lighter -O for the sanitizers
    cmd = [CC, *_build._compile_args(), "-O1", "-g", f"-fsanitize={sanitize}", "-fno-sanitize-recover=all"]
    cmd += [*(f"-D{d}" for d in defines), f"-I{_build.SRC}", "-o", exe, STRESS, *srcs, "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 and "sanitize" in r.stderr:
        tools.missing(f"{CC} has no {sanitize} sanitizer runtime: {r.stderr.splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    return exe


def run(exe: str, *args: str) -> None:
    env = {**os.environ, "TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=1"}
    r = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "Sanitizer" not in r.stderr, r.stdout[-2000:] + r.stderr[-4000:]
    assert "all equal to one thread" in r.stdout


@pytest.mark.parametrize("path", ["vector", "portable"])
def test_kernel_is_clean_under_address_and_undefined_behaviour_sanitizers(tmp_path, path):
    if path == "portable":  # the slow path: sizes up to 1.2M elements
        run(build(tmp_path, "address,undefined", "PGFP_NO_SIMD"), "1200007")
    else:
        run(build(tmp_path, "address,undefined"))


@pytest.mark.parametrize("leave_out", [(), ("PGFP_TIMING_NO_HIST", "PGFP_TIMING_NO_SKETCH")])
def test_timing_builds_are_clean_under_sanitizers(tmp_path, leave_out):
    """The benchmark's instrumented builds (pass timers; the fused pass without its
    histogram and sketch, whose quantile passes are skipped)."""
    run(build(tmp_path, "address,undefined", "PGFP_TIMING", *leave_out), "1200007")


def test_kernel_threads_have_no_data_race(tmp_path):
    run(build(tmp_path, "thread"), "1200007")

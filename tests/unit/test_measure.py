"""scripts/measure.py, with which the benchmarks measure both sides of a comparison: the peak of a
whole process tree counts what a child holds while its parent runs (the gate's ONNX Runtime
worker), in a memory cgroup of its own (a peak shorter than any sampling interval, a page a fork
shares once) or, asked for, sampled; rounds alternate which side goes first, a ratio keeps the range
of its rounds, and a benchmark's store is its own. The cgroup cases need a writable v1 memory cgroup
(root on a cgroup v1 host; GitHub's runners have cgroup v2) and skip without one."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("measure", ROOT / "scripts" / "measure.py")
measure = importlib.util.module_from_spec(_spec)
sys.modules["measure"] = measure  # dataclasses look their module up there
_spec.loader.exec_module(measure)

MB = 1 << 20
# The parent holds 100 MiB, then waits on a child that holds 200 MiB for a second.
PARENT = (
    "import subprocess, sys; held = b'\\x01' * (100 << 20); "
    "subprocess.run([sys.executable, '-c', \"import time; held = b'\\\\x01' * (200 << 20); time.sleep(1)\"], check=True)"
)


def _cgroup() -> bool:
    try:
        measure._memory_cgroup()
    except SystemExit:
        return False
    return True


CGROUP = pytest.mark.skipif(not _cgroup(), reason="no writable v1 memory cgroup here")


@pytest.fixture(params=[pytest.param("cgroup", marks=CGROUP), "sampled"])
def method(request, monkeypatch):
    """Each way of taking the peak: the cgroup (the default), and the sampler ``BENCH_PEAK`` asks for."""
    if request.param == "sampled":
        monkeypatch.setenv(measure.PEAK_ENV, "sampled")
    else:
        monkeypatch.delenv(measure.PEAK_ENV, raising=False)
    return request.param


def test_the_peak_counts_a_child_beside_its_parent(tmp_path, method):
    run = measure.measured([sys.executable, "-c", PARENT], tmp_path, ok=(0,))
    assert run.proc.returncode == 0
    # both processes' bytes at once; RUSAGE_SELF of the parent alone would stay near 100 MiB
    assert run.peak_bytes >= 300 * MB, run.peak_mib


def test_the_peak_of_one_process_is_what_it_holds(tmp_path, method):
    run = measure.measured([sys.executable, "-c", "import time; held = b'\\x01' * (100 << 20); time.sleep(0.5)"],
                           tmp_path, ok=(0,))
    assert 100 * MB <= run.peak_bytes < 250 * MB, run.peak_mib


@CGROUP
def test_a_peak_between_any_two_samples_is_measured(tmp_path):
    # 300 MiB held only while it is filled, then freed: the kernel's high-water mark keeps it
    run = measure.measured([sys.executable, "-c", "held = bytearray(300 << 20); del held"], tmp_path, ok=(0,))
    assert 300 * MB <= run.peak_bytes < 450 * MB, run.peak_mib


@CGROUP
def test_each_command_has_a_group_of_its_own_removed_after_it(tmp_path):
    before = {p.name for p in measure._memory_cgroup().iterdir()}
    big = measure.measured([sys.executable, "-c", "held = bytearray(300 << 20)"], tmp_path, ok=(0,))
    small = measure.measured([sys.executable, "-c", "pass"], tmp_path, ok=(0,))
    assert big.peak_bytes >= 300 * MB > small.peak_bytes  # nothing carried from one run to the next
    assert {p.name for p in measure._memory_cgroup().iterdir()} == before


def test_a_failed_command_stops_the_benchmark_with_its_stderr(tmp_path):
    with pytest.raises(SystemExit, match=r"failed \(3\):\nboom"):
        measure.measured([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"], tmp_path)


def test_rounds_alternate_which_side_runs_first():
    assert measure.pairs(4, ("recipe", "check")) == [("recipe", "check"), ("check", "recipe")] * 2


def test_a_ratio_is_the_median_of_the_rounds_with_their_range():
    spread = measure.Spread.of([2.6, 3.3, 2.4], [2.0, 3.0, 2.0])  # 1.3, 1.1, 1.2
    assert spread.median == pytest.approx(1.2)
    assert spread.fmt() == "1.20x (1.10-1.30, 3 pairs)"
    assert measure.Spread((1.5,)).fmt() == "1.50x (1 run)"
    assert measure.Spread((-12.1, 1.3, 23.7)).fmt(1, "%") == "1.3% (-12.1 to 23.7, 3 pairs)"


# The parent holds 200 MiB and forks: the child shares those pages for a second, writes none of them.
FORKED = (
    "import os, time; held = bytearray(200 << 20); held[::4096] = b'\\x01' * (50 << 10); pid = os.fork()\n"
    "if pid == 0:\n    time.sleep(1); os._exit(0)\n"
    "os.waitpid(pid, 0)"
)


@CGROUP
def test_pages_a_fork_shares_with_its_parent_count_once(tmp_path):
    run = measure.measured([sys.executable, "-c", FORKED], tmp_path, ok=(0,))
    assert 200 * MB <= run.peak_bytes < 300 * MB, run.peak_mib


def test_the_sampler_asked_for_counts_them_twice(tmp_path, monkeypatch):
    monkeypatch.setenv(measure.PEAK_ENV, "sampled")  # what its error and the docstring warn of
    run = measure.measured([sys.executable, "-c", FORKED], tmp_path, ok=(0,))
    assert run.peak_bytes >= 400 * MB, run.peak_mib


def test_a_benchmark_has_a_store_of_its_own_unless_its_caller_set_one(tmp_path, monkeypatch):
    monkeypatch.delenv(measure.CACHE_ENV, raising=False)
    monkeypatch.setenv("PARITY_GATE_BACKEND", "numpy")  # the caller's choice stays
    measure.own_cache()
    assert os.environ["PARITY_GATE_BACKEND"] == "numpy"
    monkeypatch.delenv("PARITY_GATE_BACKEND")  # else the kernel users run: never the fallback in silence
    own = measure.own_cache()
    assert os.environ["PARITY_GATE_BACKEND"] == "native"
    assert own is not None and own.is_dir() and not any(own.iterdir())
    assert os.environ[measure.CACHE_ENV] == str(own) and Path.home() / ".cache" not in own.parents
    assert measure.own_cache() == own  # one folder for the whole run
    monkeypatch.setenv(measure.CACHE_ENV, str(tmp_path))
    assert measure.own_cache() == tmp_path
    monkeypatch.setenv(measure.CACHE_ENV, "off")
    assert measure.own_cache() is None and os.environ[measure.CACHE_ENV] == "off"


def test_the_path_says_where_the_reference_ran_as_the_gate_prints_it():
    """The reference's stage, as a check prints its end on a CI log: beside the export, stopped and
    rerun here, or after the export; and each stage's state from the report."""
    from gate.core.progress import TimedProgress
    from gate.pipeline.beside import BESIDE

    def printed(*stages: str) -> str:
        lines: list[str] = []
        progress = TimedProgress(lines.append)
        for stage in stages:
            progress(stage)
        progress.finish()
        return "\n".join(line for line in lines if line.startswith("  "))  # what a CI log keeps

    report = {"models": [{"reuse": {"why": "key-changed", "stages": [{"stage": "export", "state": "miss"}]}}]}
    beside, here = f"m: float64 reference on torch-cpu, {BESIDE}", "m: float64 reference on torch-cpu"
    assert measure.path_taken(report, printed("m: exporting to ONNX", beside)) == (
        "export miss (reference: key-changed), reference beside the export")
    stopped = measure.path_taken(report, printed(beside, here))
    assert stopped.endswith("reference after the export (the child stopped)")
    assert measure.path_taken({}, printed(here)) == "reference after the export"
    assert measure.path_taken({}, printed(here, "m: exporting to ONNX")) == "reference before the export"
    assert measure.path_taken({}, printed("m: exporting to ONNX")) == ""

"""scripts/measure.py, with which the benchmarks measure both sides of a comparison: the peak of a
whole process tree counts what a child holds while its parent runs (the gate's ONNX Runtime
worker), rounds alternate which side goes first, and a ratio keeps the range of its rounds."""

from __future__ import annotations

import importlib.util
import sys

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


def test_the_peak_counts_a_child_beside_its_parent(tmp_path):
    run = measure.measured([sys.executable, "-c", PARENT], tmp_path, ok=(0,))
    assert run.proc.returncode == 0
    # both processes' bytes at once; RUSAGE_SELF of the parent alone would stay near 100 MiB
    assert run.peak_bytes >= 300 * MB, run.peak_mib


def test_the_peak_of_one_process_is_what_it_holds(tmp_path):
    run = measure.measured([sys.executable, "-c", "import time; held = b'\\x01' * (100 << 20); time.sleep(0.5)"],
                           tmp_path, ok=(0,))
    assert 100 * MB <= run.peak_bytes < 250 * MB, run.peak_mib


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


def test_pages_a_fork_shares_with_its_parent_count_once(tmp_path):
    run = measure.measured([sys.executable, "-c", FORKED], tmp_path, ok=(0,))
    # RSS summed would count the 200 MiB twice (400+ MiB) while the child lives
    assert 200 * MB <= run.peak_bytes < 300 * MB, run.peak_mib
    # PSS walks every page table: read at most every PSS_SAMPLE_S while the fork lives, not every sample
    assert 1 <= run.pss_reads <= 1.0 / measure.PSS_SAMPLE_S + 2, run.pss_reads

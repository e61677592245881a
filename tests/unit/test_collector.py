"""The garbage collector around a command (``gate.core.collector``): no full collection while a
command loads, young garbage still collected, the heap set aside while the stages run and at the
interpreter's exit, and the process's own thresholds back whatever way the command ends."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from gate.core import collector

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _thresholds():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_a_command_loads_without_full_collections_and_restores_the_thresholds():
    gc.set_threshold(500, 7, 9)
    with collector.command():
        assert gc.get_threshold() == (500, 7, collector.LOADING)
    assert gc.get_threshold() == (500, 7, 9)


def test_the_thresholds_come_back_when_the_command_raises():
    gc.set_threshold(700, 10, 10)
    with pytest.raises(SystemExit), collector.command():
        raise SystemExit(2)
    assert gc.get_threshold() == (700, 10, 10)


def test_young_cycles_are_collected_while_loading():
    collected = []

    class Node:
        def __init__(self):
            self.me = self

    with collector.command():
        gc.collect()  # a clean start: what follows is left to the automatic collections
        for _ in range(20_000):
            node = Node()
            weakref.finalize(node, collected.append, 1)
            del node
        assert gc.isenabled()
        assert len(collected) > 10_000  # the cycles went in young collections, no gc.collect()


def test_the_stages_run_frozen_with_full_collections_back():
    gc.set_threshold(700, 10, 10)
    with collector.command():
        with collector.frozen():
            assert gc.get_threshold() == (700, 10, 10)
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == (700, 10, 10)  # loading is over for the rest of the command


def test_the_cli_s_process_exits_with_its_heap_set_aside():
    # Registered before the CLI's own exit handler, so it runs after it (atexit runs in reverse).
    code = ("import atexit, gc, os, sys\n"
            "atexit.register(lambda: os.write(1, f'frozen {gc.get_freeze_count()}\\n'.encode()))\n"
            "from gate.cli.app import main\n"
            "sys.argv = ['parity-gate', '--version']\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    frozen = int(proc.stdout.split("frozen ")[-1])
    assert frozen > 10_000  # the interpreter's whole heap, not collected at the exit

"""A computation in a forked child (``gate.runners.forked``): its value comes back whole, its steps
are counted as it goes, and any end without a value (an exception, a value that does not pickle, a
signal, a stop) gives None, so that the caller computes the value itself."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import torch

from gate import env
from gate.errors import ConfigError
from gate.pipeline import beside
from gate.runners import forked

pytestmark = pytest.mark.skipif(not forked.available(), reason="no fork here")


def test_the_child_s_value_comes_back_whole():
    weights = torch.arange(12, dtype=torch.float64).reshape(3, 4)

    def work(tick):
        for _ in range(5):
            tick()
        return {"sum": float((weights @ weights.T).sum()), "threads": torch.get_num_threads()}

    child = forked.Forked(work)
    # one thread past a fork
    assert child.result() == {"sum": float((weights @ weights.T).sum()), "threads": 1}


def test_the_child_s_steps_are_counted_while_it_runs():
    def work(tick):
        for _ in range(3):
            tick()
        time.sleep(30)

    child = forked.Forked(work)
    deadline = time.monotonic() + 20
    while child.done < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert child.done == 3 and child.running
    child.stop()
    assert not child.running


def _unpicklable(_tick):
    return threading.Lock()


def _raises(_tick):
    raise RuntimeError("no value")


def _killed(_tick):
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("work", [_unpicklable, _raises, _killed], ids=["unpicklable", "raises", "killed"])
def test_a_child_that_ends_without_a_value_gives_none(work):
    assert forked.Forked(work).result() is None


def test_the_parent_waits_for_a_child_whose_rest_is_shorter_than_a_run_of_its_own():
    # 2 threads here run 1.6x the child's pace: a child 3/4 through has 1/3 of its time left, a
    # run from the start here would take 5/6 of it.
    assert beside._worth_waiting(done=75, layers=100, elapsed=3.0, threads=2)
    assert not beside._worth_waiting(done=25, layers=100, elapsed=3.0, threads=2)  # 9 s left against 7.5 s
    assert not beside._worth_waiting(done=0, layers=100, elapsed=0.5, threads=2)  # no pace to judge by
    assert beside._worth_waiting(done=40, layers=100, elapsed=3.0, threads=1)  # one thread here: no faster


def test_off_runs_every_stage_in_the_process(monkeypatch):
    monkeypatch.setenv(env.BESIDE, "off")
    assert beside.start(object(), 10, 1.0, 100) is None  # type: ignore[arg-type]


def test_a_wrong_mode_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv(env.BESIDE, "yes")
    with pytest.raises(ConfigError, match=r"PARITY_GATE_BESIDE='yes': expected one of auto, on, off"):
        beside.start(object(), 10, 1.0, 100)  # type: ignore[arg-type]


def test_a_short_forward_is_not_worth_a_process():
    assert beside.start(object(), 10, beside.MIN_FORWARD_S / 2, 100) is None  # type: ignore[arg-type]


def test_auto_predicts_whether_the_export_hides_the_reference():
    from gate.pipeline.beside import hides

    # The probe's figures on 2 threads (the Zen 4 host). GPT-2, 644 operations, 0.5 GB: its float32
    # forward took 1.4 s at 512 tokens and 7.6 s at 2048, against an export of 6.0-6.6 s.
    assert hides(1.4, 644, 500_000_000, threads=2)
    assert hides(2.2, 644, 500_000_000, threads=2)  # a slow probe: a little past the export still pays
    assert not hides(7.6, 644, 500_000_000, threads=2)
    assert not hides(1.4, 644, 500_000_000, threads=8)  # the child has one thread, the parent eight
    # The 2.4 GB model: 110 operations, but 2.4 GB of weights written (an export of 8.3 s).
    assert hides(1.8, 110, 2_400_000_000, threads=2)
    assert not hides(1.8, 110, 50_000_000, threads=2)


def test_auto_predicts_whether_a_binding_of_new_weights_hides_the_reference():
    from gate.pipeline.beside import hides

    # A binding (the optimizer over the stored structure, the weights written) is shorter than a
    # trace: BERT-base's 2.3 s for 482 operations and 0.44 GB, the 2.4 GB model's 5.9 s.
    assert hides(0.6, 482, 440_000_000, threads=2, binding=True)
    assert hides(1.8, 110, 2_400_000_000, threads=2, binding=True)
    assert not hides(1.8, 110, 50_000_000, threads=2, binding=True)
    # GPT-2 at 512 tokens: its binding (predicted 2.6 s) ends with the child (4.5 s) 57% through, where
    # waiting pays (measured: 2.2 s less than the reference before it); at 2048 tokens 11%: no child.
    assert hides(1.4, 644, 500_000_000, threads=2, binding=True)
    assert not hides(7.6, 644, 500_000_000, threads=2, binding=True)


def test_a_child_starts_where_the_parent_would_wait_for_it_when_the_export_ends():
    from gate.pipeline.beside import _pays, _worth_waiting, hides

    # 2 threads here: 1.6x the child's pace; waiting pays from 37.5% through (1 - 0.375 = 1 / 1.6).
    assert _pays(0.38, threads=2) and not _pays(0.37, threads=2)
    assert _pays(0.0, threads=1)  # one thread here: never faster than the child
    # A child predicted 1.6 s x 2 (float64) x 1.6 = 5.12 s; an export of 0.009 s per operation.
    assert hides(1.6, 217, 0, threads=2)  # 1.95 s: 38.1% through, started
    assert not hides(1.6, 210, 0, threads=2)  # 1.89 s: 36.9%, the reference runs before the export
    assert _worth_waiting(38, 100, 2.0, threads=2) and not _worth_waiting(37, 100, 2.0, threads=2)

"""gate.core.background: a computation on a thread, its result or its exception collected later."""

from __future__ import annotations

import threading

import pytest

from gate.core.background import Background


def test_the_result_comes_from_another_thread_and_is_collected_once_done():
    started = threading.Event()
    go = threading.Event()

    def work(a, b):
        started.set()
        go.wait(10)
        return (threading.current_thread() is not threading.main_thread(), a + b)

    pending = Background(work, 2, 3)
    assert started.wait(10)  # running before anyone asks
    go.set()
    assert pending.result() == (True, 5)
    assert pending.result() == (True, 5)


def test_an_exception_is_raised_where_the_result_is_asked_for():
    def fail():
        raise FileNotFoundError("model.onnx.data")

    pending = Background(fail)
    with pytest.raises(FileNotFoundError, match="model.onnx.data"):
        pending.result()

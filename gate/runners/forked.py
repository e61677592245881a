"""A PyTorch computation in a forked child beside the parent's own work: the float64 reference while
the parent exports (docs/verdict.md#stages).

torch's exporter patches ``torch.nn.Module.__call__`` process-wide while it traces, so the reference
cannot share its process. The child shares the built model copy-on-write and runs on one intra-op
thread (GNU OpenMP started in the parent is not safe past a fork with more). Any failure of the
child says nothing about the model: the caller then computes the result itself."""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

import torch

T = TypeVar("T")
_COUNT = struct.Struct("<q")


def available() -> bool:
    """Whether a child can be forked here: POSIX, and no CUDA context (a forked one is unusable)."""
    return hasattr(os, "fork") and not torch.cuda.is_initialized()  # type: ignore[no-untyped-call]


def threads() -> int:
    """This process's intra-op threads (the child's are one)."""
    return torch.get_num_threads()


class Forked(Generic[T]):
    """``fn(tick)`` running in a forked child; ``tick()`` counts its steps for ``done`` to read.
    ``result()`` waits for it: its value, or None when the child did not give one. ``stop()`` ends it."""

    def __init__(self, fn: Callable[[Callable[[], None]], T]) -> None:
        self._steps = mmap.mmap(-1, _COUNT.size)  # shared with the child: its step count, no syscall per step
        self._folder = tempfile.TemporaryDirectory(prefix="parity-gate-beside-")
        self._out = Path(self._folder.name) / "result.pickle"
        self.started = time.perf_counter()
        sys.stdout.flush()
        sys.stderr.flush()  # what the parent buffered is not written twice
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its end is seen by the parent
            os._exit(self._child(fn))
        self._pid: int | None = pid

    def _child(self, fn: Callable[[Callable[[], None]], T]) -> int:
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            torch.set_num_threads(1)
            steps = self._steps
            count = [0]

            def tick() -> None:
                count[0] += 1
                _COUNT.pack_into(steps, 0, count[0])

            value = fn(tick)
            tmp = self._out.with_suffix(".part")
            tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.rename(self._out)  # whole, or not at all
            return 0
        except BaseException:  # noqa: BLE001 - the caller runs it itself; the model's failure shows there
            return 1
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()

    @property
    def done(self) -> int:
        count: int = _COUNT.unpack_from(self._steps, 0)[0]
        return count

    @property
    def running(self) -> bool:
        if self._pid is None:
            return False
        pid, status = os.waitpid(self._pid, os.WNOHANG)
        if pid == 0:
            return True
        self._pid, self._status = None, status
        return False

    def result(self) -> T | None:
        """Wait for the child: its value, or None when it ended without one."""
        if self._pid is not None:
            _, self._status = os.waitpid(self._pid, 0)
            self._pid = None
        try:
            if os.waitstatus_to_exitcode(self._status) != 0 or not self._out.is_file():
                return None
            value: T = pickle.loads(self._out.read_bytes())  # noqa: S301 - written by this process's child
            return value
        finally:
            self.close()

    def stop(self) -> None:
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = None
        self.close()

    def close(self) -> None:
        self._folder.cleanup()
        with contextlib.suppress(ValueError):
            self._steps.close()

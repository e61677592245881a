"""Run a provider in a worker process (``python -m gate.runners.worker JOB``).

A segfaulting EP, a hung kernel or an allocation past the budget ends the worker, not the gate, and
becomes the provider's status (CRASH, TIMEOUT). The worker writes its ``ProviderRun`` to a result
file, never a pipe, so a large result cannot deadlock on a full pipe buffer; its stdout carries only
progress lines. A ``Spare`` is started before its job exists, so its imports overlap the export."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from gate.config import Isolation, ProviderSpec
from gate.core.runs import ProviderRun
from gate.core.status import ErrorStatus
from gate.core.target import Target
from gate.errors import FormatError
from gate.formats.results import read_run
from gate.runners.base import Subject
from gate.runners.job import WorkerJob

PROGRESS = "parity-gate-progress: "  # a worker's stdout line that is progress; other lines are dropped
WAIT = "-"  # the worker's argument that makes it a spare: it reads the job's path from its stdin


class Spare:
    """A worker started before its job exists, waiting on its stdin for the job's path.
    ``run_isolated`` claims it once; ``close`` ends one never claimed (its stdin closed, it exits)."""

    def __init__(self) -> None:
        self._err = tempfile.TemporaryFile()  # a file: a chatty worker cannot fill a pipe
        self._proc: subprocess.Popen[bytes] | None = _spawn(WAIT, self._err)

    def claim(self) -> tuple[subprocess.Popen[bytes], Any] | None:
        """The waiting worker and its stderr file; None when it was claimed or has ended."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is not None:  # it ended before its job: a fresh worker runs the job instead
            self._err.close()
            return None
        return proc, self._err

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(proc)
        self._err.close()


def job_for(spec: ProviderSpec, subject: Subject, isolation: Isolation, config: Path | None) -> WorkerJob:
    return WorkerJob(subject.bundle, subject.run.name, spec, config=config, threads=subject.threads,
                     memory_mb=isolation.memory_mb, capture_bytes=subject.capture_bytes,
                     output_tolerance=tuple(subject.output_tolerance) if subject.output_tolerance else None,
                     repeats=subject.repeats, latency=subject.latency)


def run_isolated(job: WorkerJob, target: Target, timeout_s: float,
                 detail: Callable[[str], None] | None = None, spare: Spare | None = None) -> ProviderRun:
    """Run ``job`` in a worker (``spare`` where one waits): its ProviderRun, or CRASH/TIMEOUT for
    ``target``; its progress lines go to ``detail``."""
    what = f"{job.what}: {target.provider}"
    with tempfile.TemporaryDirectory(prefix="parity-gate-worker-") as tmp:
        out = Path(tmp) / "result.msgpack.zst"
        job_path = Path(tmp) / "job.msgpack"
        job_path.write_bytes(replace(job, result=out).to_bytes())
        waiting = spare.claim() if spare is not None else None
        with (waiting[1] if waiting else open(Path(tmp) / "stderr", "w+b")) as err:
            proc = _handed(waiting[0], job_path) if waiting else None
            proc = proc or _spawn(job_path, err)
            reader = threading.Thread(target=_forward, args=(proc.stdout, detail), daemon=True)
            reader.start()
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill(proc)
                return ProviderRun.failed(target, ErrorStatus.TIMEOUT, f"{what} did not finish within {timeout_s:g} s")
            finally:
                reader.join(timeout=5)
            err.seek(0)
            stderr = err.read()
        if proc.returncode == 0 and out.is_file():
            try:
                return read_run(out).providers[0]
            except (FormatError, IndexError) as exc:
                return ProviderRun.failed(target, ErrorStatus.CRASH, f"{what}: the worker's result is unreadable ({exc})")
        return ProviderRun.failed(target, ErrorStatus.CRASH, _crash_message(what, proc.returncode, stderr, job.memory_mb))


def report(message: str) -> None:
    sys.stdout.buffer.write(f"{PROGRESS}{message}\n".encode())
    sys.stdout.buffer.flush()


def _forward(stream: IO[bytes], detail: Callable[[str], None] | None) -> None:
    """Read the worker's stdout to its end (so it never blocks on it); hand progress lines on."""
    for raw in stream:
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        if detail is not None and line.startswith(PROGRESS):
            detail(line[len(PROGRESS):])
    stream.close()


def _handed(proc: subprocess.Popen[bytes], job_path: Path) -> subprocess.Popen[bytes] | None:
    """``proc`` (a spare) given ``job_path``; None when it can no longer take it."""
    try:
        assert proc.stdin is not None
        proc.stdin.write(f"{job_path}\n".encode())
        proc.stdin.close()
    except OSError:  # it ended meanwhile
        proc.wait()
        return None
    return proc


def _spawn(job: Path | str, stderr: int | IO[Any] | None) -> subprocess.Popen[bytes]:
    """A worker for the job file ``job``; a spare's (``job`` is ``WAIT``) stdin is a pipe."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    # Its own process group (session on POSIX), so a timeout ends the worker and its children.
    group = ({"start_new_session": True} if os.name == "posix"
             else {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)})
    return subprocess.Popen([sys.executable, "-m", "gate.runners.worker", str(job)], env=env,
                            stdin=subprocess.PIPE if job == WAIT else None, stdout=subprocess.PIPE,
                            stderr=stderr, **group)


def _kill(proc: subprocess.Popen[Any]) -> None:
    if hasattr(os, "killpg"):
        os.killpg(proc.pid, signal.SIGKILL)
    else:  # pragma: no cover - Windows
        proc.kill()
    proc.wait()


def _crash_message(what: str, returncode: int, stderr: bytes, budget_mb: int | None) -> str:
    tail = stderr.decode(errors="replace").strip().splitlines()[-1:] if stderr else []
    if returncode < 0:
        sig = signal.Signals(-returncode).name
        cause = " (out of memory?)" if sig == "SIGKILL" else ""
        return f"{what} crashed: worker killed by {sig}{cause}"
    if any("MemoryError" in t or "bad_alloc" in t for t in tail):
        return f"{what} ran out of memory (budget {budget_mb} MiB)"
    return f"{what} crashed: worker exited with {returncode}" + (f" ({tail[0][:200]})" if tail else "")

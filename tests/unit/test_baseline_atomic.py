"""Atomic replacement and the writer lock, checked with real processes and SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from gate.formats.baseline import (
    atomic_write_bytes,
    atomic_write_text,
    baseline_lock,
    encode_baseline,
    read_document,
    write_baseline,
)
from tests.support.baseline_docs import make_document

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_atomic_write_leaves_no_temp_files(tmp_path):
    target = tmp_path / "report.md"
    atomic_write_text(target, "one\n")
    atomic_write_bytes(target, b"two\n")
    assert target.read_bytes() == b"two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_failed_write_removes_its_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "x.msgpack.zst"
    atomic_write_bytes(target, b"old")

    def boom(*a):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert _temps(tmp_path) == []


KILLED_WRITER = """
    import io, os, signal, sys
    from pathlib import Path
    from gate.formats.baseline import atomic_write_bytes, baseline_lock
    path, data, step = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), sys.argv[3]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    class DiesHalfWay(io.FileIO):
        def write(self, b):
            b = memoryview(b)[: len(b) // 2]
            while b:
                b = b[super().write(b):]
            os.fsync(self.fileno())  # the half is on disk, as a write cut short by the kill leaves it
            die()

    real_replace = os.replace
    if step == "mid-write":  # atomic_write_bytes writes through os.fdopen
        os.fdopen = lambda fd, mode="r", *a, **k: DiesHalfWay(fd, mode)
    elif step == "before-replace":
        os.replace = lambda src, dst: die()
    elif step == "after-replace":
        os.replace = lambda src, dst: (real_replace(src, dst), die())
    with baseline_lock(path):  # write_baseline's write path: the lock, then the atomic replace
        atomic_write_bytes(path, data)
    sys.exit("not killed")
"""


@pytest.mark.parametrize(("step", "left"), [("mid-write", "old"), ("before-replace", "old"), ("after-replace", "new")])
def test_writer_killed_at_each_step_leaves_a_whole_baseline(tmp_path, step, left):
    """A real writer process SIGKILLed at a chosen point of the write: half of the temp file
    written, the temp file complete but not yet renamed, renamed but the folder not yet synced.
    The baseline is the old file or the new one, never a mix; a partial file is never a baseline."""
    path = tmp_path / "big.msgpack.zst"
    write_baseline(path, make_document(200, sketch_width=256, seed=1))
    old = path.read_bytes()
    new = encode_baseline(make_document(200, sketch_width=256, seed=2))
    blob = tmp_path.parent / f"{tmp_path.name}-new"
    blob.write_bytes(new)
    child = _python(KILLED_WRITER, str(path), str(blob), step)
    out, err = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, err
    assert path.read_bytes() == (old if left == "old" else new)
    read_document(path)
    temps = _temps(tmp_path)
    written = {"mid-write": [len(new) // 2], "before-replace": [len(new)], "after-replace": []}[step]
    assert [t.stat().st_size for t in temps] == written  # where the kill landed
    # a killed writer's temp file is hidden and never looks like a baseline
    for tmp in temps:
        assert tmp.name.startswith(".big.msgpack.zst.") and not tmp.name.endswith(".msgpack.zst")
    assert [p.name for p in tmp_path.glob("*.msgpack.zst")] == ["big.msgpack.zst"]
    # the next write_baseline takes the lock the killed writer held and clears its temp file only
    (tmp_path / ".other.msgpack.zst.abc.tmp").write_bytes(b"another file's temp")
    write_baseline(path, make_document(2))
    assert [p.name for p in _temps(tmp_path)] == [".other.msgpack.zst.abc.tmp"]
    assert read_document(path) == make_document(2)


CONCURRENT = """
    import sys
    from pathlib import Path
    from gate.formats.baseline import write_baseline
    from tests.support.baseline_docs import make_document
    path, seed, start = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    doc = make_document(300, sketch_width=64, seed=seed)
    import time
    time.sleep(max(0.0, start - time.time()))
    for _ in range(10):
        write_baseline(path, doc)
"""


def test_concurrent_writers_leave_exactly_one_valid_document(tmp_path):
    path = tmp_path / "race.msgpack.zst"
    start = time.time() + 1.0
    children = [_python(CONCURRENT, str(path), str(seed), str(start)) for seed in range(4)]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    expected = {encode_baseline(make_document(300, sketch_width=64, seed=seed)) for seed in range(4)}
    assert path.read_bytes() in expected
    read_document(path)
    assert _temps(tmp_path) == []


UPDATER = """
    import sys
    from pathlib import Path
    from gate.formats.baseline import baseline_lock, read_document, write_baseline
    path, name = Path(sys.argv[1]), sys.argv[2]
    for i in range(5):
        with baseline_lock(path):  # read-modify-write: keep other writers' providers
            doc = read_document(path)
            doc["providers"][f"{name}-{i}"] = {"cpu": {"precision": "float32", "layers": {}}}
            write_baseline(path, doc)
"""


def test_lock_serializes_read_modify_write_across_processes(tmp_path):
    path = tmp_path / "shared.msgpack.zst"
    write_baseline(path, make_document(20, providers=()))
    children = [_python(UPDATER, str(path), f"P{k}") for k in range(4)]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    assert sorted(read_document(path)["providers"]) == sorted(f"P{k}-{i}" for k in range(4) for i in range(5))


def test_lock_is_reentrant_and_excludes_other_threads(tmp_path):
    path = tmp_path / "t.msgpack.zst"
    write_baseline(path, make_document(5, providers=()))

    def update(name):
        for i in range(10):
            with baseline_lock(path):
                doc = read_document(path)
                doc["providers"][f"{name}-{i}"] = {"cpu": {"precision": "float32", "layers": {}}}
                write_baseline(path, doc)  # takes the same lock again: must not deadlock

    threads = [threading.Thread(target=update, args=(f"T{k}",)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(read_document(path)["providers"]) == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.msgpack.zst"]

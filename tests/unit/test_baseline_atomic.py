"""Atomic replacement and the writer lock, checked with real processes and SIGKILL."""

from __future__ import annotations

import os
import random
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
from gate.formats.baseline.testing import make_document

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


WRITER = """
    import sys
    from pathlib import Path
    from gate.formats.baseline import atomic_write_bytes, baseline_lock
    path = Path(sys.argv[1])
    blobs = [Path(p).read_bytes() for p in sys.argv[2:]]
    print("ready", flush=True)
    i = 0
    while True:  # write_baseline's write path (lock + atomic replace) on pre-encoded documents
        with baseline_lock(path):
            atomic_write_bytes(path, blobs[i % 2])
        i += 1
"""


def test_killed_writer_leaves_previous_baseline_intact(tmp_path):
    path = tmp_path / "big.msgpack.zst"
    blobs = [tmp_path.parent / f"{tmp_path.name}-blob{s}" for s in (1, 2)]
    for s, blob in zip((1, 2), blobs, strict=True):
        blob.write_bytes(encode_baseline(make_document(1500, sketch_width=1024, seed=s)))
    valid = {blob.read_bytes() for blob in blobs}
    assert min(len(b) for b in valid) > 10_000_000  # big enough for a kill to land mid-write
    write_baseline(path, make_document(1500, sketch_width=1024, seed=1))
    rng = random.Random(0)
    kills = mid_write = 0
    while kills < 5 or (mid_write == 0 and kills < 20):
        temps_before = set(_temps(tmp_path))
        child = _python(WRITER, str(path), *map(str, blobs))
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(rng.uniform(0.0, 0.4))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()
        kills += 1
        mid_write += bool(set(_temps(tmp_path)) - temps_before)
        assert path.read_bytes() in valid  # the old file or the new one, never a mix
        read_document(path)
    assert mid_write >= 1, "no kill landed during a write"
    print(f"{kills} kills, {mid_write} mid-write")
    # stale temp files of killed writers are hidden and never look like a baseline
    for tmp in _temps(tmp_path):
        assert tmp.name.startswith(".big.msgpack.zst.") and not tmp.name.endswith(".msgpack.zst")
    assert [p.name for p in tmp_path.glob("*.msgpack.zst")] == ["big.msgpack.zst"]
    # the next write_baseline, holding the lock, clears them
    (tmp_path / ".other.msgpack.zst.abc.tmp").write_bytes(b"another file's temp")
    write_baseline(path, make_document(2))
    assert [p.name for p in _temps(tmp_path)] == [".other.msgpack.zst.abc.tmp"]


CONCURRENT = """
    import sys
    from pathlib import Path
    from gate.formats.baseline import write_baseline
    from gate.formats.baseline.testing import make_document
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

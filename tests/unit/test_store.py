"""The store of stage outputs (gate/store) on real files and a real ONNX graph: whole entries or none,
every check a reader makes, one output per key (a second, different one raises an alarm and bars the
key), least recently used entries pruned first."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gate.core.status import CacheState, Stage
from gate.store import MANIFEST, PutState, Store, store_dir

KEY_A, KEY_B, KEY_C = "a" * 64, "b" * 64, "c" * 64
DIGEST_1, DIGEST_2 = "1" * 64, "2" * 64


def graph(folder: Path, scale: float = 2.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], np.full(4, scale, np.float32).tolist())
    node = helper.make_node("Mul", ["x", "w"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w])
    path = folder / "model.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


def writer(source: Path, extra: bytes | None = None):
    def write(folder: Path) -> None:
        (folder / "model.onnx").write_bytes(source.read_bytes())
        if extra is not None:
            (folder / "extra.bin").write_bytes(extra)
    return write


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")


def test_an_entry_reads_back_as_stored(store, tmp_path):
    path = graph(tmp_path / "g")
    put = store.put(Stage.EXPORT, KEY_A, writer(path, b"\x00\x01"), DIGEST_1, {"exporter": "dynamo"})
    assert put.state == PutState.STORED and put.alarm is None
    found = store.get(Stage.EXPORT, KEY_A)
    assert found.state == CacheState.HIT and found.entry.payload == {"exporter": "dynamo"}
    assert found.entry.digest == DIGEST_1 and found.entry.files == ("extra.bin", "model.onnx")
    assert found.entry.path("model.onnx").read_bytes() == path.read_bytes()
    assert store.get(Stage.EXPORT, KEY_B).state == CacheState.MISS
    assert store.get(Stage.TRANSFORM, KEY_A).state == CacheState.MISS  # stages do not share keys


def test_the_same_output_again_is_a_no_op(store, tmp_path):
    path = graph(tmp_path / "g")
    store.put(Stage.EXPORT, KEY_A, writer(path), DIGEST_1, {})
    before = store.get(Stage.EXPORT, KEY_A).entry.folder.stat().st_ino
    assert store.put(Stage.EXPORT, KEY_A, writer(path), DIGEST_1, {}).state == PutState.SAME
    assert store.get(Stage.EXPORT, KEY_A).entry.folder.stat().st_ino == before


def test_another_output_under_a_key_replaces_nothing_raises_an_alarm_and_bars_the_key(store, tmp_path):
    store.put(Stage.EXPORT, KEY_A, writer(graph(tmp_path / "g1", 2.0)), DIGEST_1, {"n": 1})
    put = store.put(Stage.EXPORT, KEY_A, writer(graph(tmp_path / "g2", 3.0)), DIGEST_2, {"n": 2})
    assert put.state == PutState.ALARM
    assert (put.alarm.stage, put.alarm.key, put.alarm.stored, put.alarm.computed) == ("export", KEY_A, DIGEST_1,
                                                                                       DIGEST_2)
    # Barred from now on: never read (not even the first output), never written.
    found = store.get(Stage.EXPORT, KEY_A)
    assert found.state == CacheState.ALARM and found.entry is None and "never reused" in found.note
    again = store.put(Stage.EXPORT, KEY_A, writer(graph(tmp_path / "g1", 2.0)), DIGEST_1, {"n": 1})
    assert again.state == PutState.BARRED and again.alarm.key == KEY_A
    assert Store(store.root).alarmed(Stage.EXPORT, KEY_A) is not None  # on disk: another process sees it
    assert store.get(Stage.EXPORT, KEY_B).state == CacheState.MISS  # other keys unaffected


def test_a_stage_rule_decides_sameness_beyond_equal_digests(store, tmp_path):
    """Float64 outputs differ in their last bits between machines: the stage says what agrees."""
    store.put(Stage.REFERENCE, KEY_A, writer(graph(tmp_path / "g")), DIGEST_1, {})
    assert store.put(Stage.REFERENCE, KEY_A, writer(graph(tmp_path / "g")), DIGEST_2, {},
                     agrees=lambda entry: None).state == PutState.SAME
    put = store.put(Stage.REFERENCE, KEY_A, writer(graph(tmp_path / "g")), DIGEST_2, {},
                    agrees=lambda entry: "output 0: relative L2 0.1")
    assert put.state == PutState.ALARM and put.alarm.note == "output 0: relative L2 0.1"


def test_an_unreadable_alarm_record_still_bars_its_key(store, tmp_path):
    store.raise_alarm(Stage.EXPORT, KEY_A, DIGEST_1, DIGEST_2)
    (store.root / "alarms" / f"export-{KEY_A}.json").write_bytes(b"\xff not json")
    alarm = store.alarmed(Stage.EXPORT, KEY_A)
    assert alarm is not None and "unreadable" in alarm.note
    assert store.get(Stage.EXPORT, KEY_A).state == CacheState.ALARM


def test_of_two_writers_racing_for_a_key_the_first_wins_and_the_second_is_compared(store, tmp_path):
    path_1, path_2 = graph(tmp_path / "g1", 2.0), graph(tmp_path / "g2", 3.0)
    started, results = threading.Barrier(2), {}

    def slow(path):
        def write(folder: Path) -> None:
            started.wait()  # both have looked and found nothing before either renames
            writer(path)(folder)
        return write

    threads = [threading.Thread(target=lambda n=n, p=p, d=d: results.__setitem__(
        n, store.put(Stage.EXPORT, KEY_A, slow(p), d, {}))) for n, p, d in (("one", path_1, DIGEST_1),
                                                                             ("two", path_2, DIGEST_2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.state for r in results.values()) == [PutState.ALARM, PutState.STORED]
    assert store.get(Stage.EXPORT, KEY_A).state == CacheState.ALARM


def _damage(folder: Path, how: str) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    if how == "manifest of another key":
        manifest["key"] = KEY_B
    elif how == "manifest of another stage":
        manifest["stage"] = "reference"
    elif how == "manifest of another format":
        manifest["format"] = "something/else"
    elif how == "a file it does not list":
        (folder / "evil.bin").write_bytes(b"\0")
    elif how == "a file it lists is missing":
        manifest["files"]["evil.bin"] = {"size": 1, "sha256": "0" * 64}
    elif how == "a longer graph":
        (folder / "model.onnx").write_bytes((folder / "model.onnx").read_bytes() + b"\0")
    elif how == "same size, other bytes":
        data = bytearray((folder / "model.onnx").read_bytes())
        data[-1] ^= 1
        (folder / "model.onnx").write_bytes(bytes(data))
    elif how == "no payload":
        del manifest["payload"]
    elif how == "a digest that is not one":
        manifest["digest"] = "xyz"
    elif how == "not JSON":
        (folder / MANIFEST).write_bytes(b"\xff\xfe")
        return
    elif how == "no manifest":
        (folder / MANIFEST).unlink()
        return
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("how", ["manifest of another key", "manifest of another stage", "manifest of another format",
                                 "a file it does not list", "a file it lists is missing", "a longer graph",
                                 "same size, other bytes", "no payload", "a digest that is not one", "not JSON",
                                 "no manifest"])
def test_a_damaged_entry_is_corrupt_removed_and_replaced_without_an_alarm(store, tmp_path, how):
    path = graph(tmp_path / "g")
    store.put(Stage.EXPORT, KEY_A, writer(path), DIGEST_1, {})
    _damage(store.folder(Stage.EXPORT, KEY_A), how)
    found = store.get(Stage.EXPORT, KEY_A)
    assert found.state == CacheState.CORRUPT and found.entry is None and found.note.startswith("entry aaaaaaaaaaaa:")
    assert not store.folder(Stage.EXPORT, KEY_A).exists()
    # Damage is no second output: the entry is written again, no alarm.
    assert store.put(Stage.EXPORT, KEY_A, writer(path), DIGEST_2, {}).state == PutState.STORED
    assert store.get(Stage.EXPORT, KEY_A).state == CacheState.HIT


def test_a_manifest_over_the_limit_is_refused_before_it_is_read(store, tmp_path, monkeypatch):
    store.put(Stage.EXPORT, KEY_A, writer(graph(tmp_path / "g")), DIGEST_1, {})
    size = (store.folder(Stage.EXPORT, KEY_A) / MANIFEST).stat().st_size
    monkeypatch.setattr("gate.store.entry.MANIFEST_MAX", size)
    assert store.get(Stage.EXPORT, KEY_A).state == CacheState.HIT  # at the limit
    monkeypatch.setattr("gate.store.entry.MANIFEST_MAX", size - 1)
    found = store.get(Stage.EXPORT, KEY_A)
    assert found.state == CacheState.CORRUPT and "limit" in found.note


def test_a_key_that_is_not_one_and_a_stage_that_is_not_one_are_refused(store):
    with pytest.raises(ValueError):
        store.folder(Stage.EXPORT, "../../etc")
    with pytest.raises(ValueError):
        store.folder("../exports", KEY_A)


def test_a_file_a_stage_cannot_name_is_refused_and_nothing_is_left(store, tmp_path):
    def write(folder: Path) -> None:
        (folder / ".hidden").write_bytes(b"x")

    with pytest.raises(ValueError, match="cannot hold"):
        store.put(Stage.EXPORT, KEY_A, write, DIGEST_1, {})
    assert store.get(Stage.EXPORT, KEY_A).state == CacheState.MISS
    assert not [p for p in (store.root / "export").iterdir()]


def test_the_least_recently_used_entries_go_first_and_alarms_stay(store, tmp_path):
    path = graph(tmp_path / "g")
    for i, key in enumerate((KEY_A, KEY_B, KEY_C)):
        store.put(Stage.EXPORT, key, writer(path, bytes(8000)), DIGEST_1, {})
        os.utime(store.folder(Stage.EXPORT, key) / MANIFEST, (time.time() - 100 + i, time.time() - 100 + i))
    store.raise_alarm(Stage.TRANSFORM, KEY_A, DIGEST_1, DIGEST_2)
    store.get(Stage.EXPORT, KEY_A)  # used now: the newest
    one = sum(p.stat().st_size for p in store.folder(Stage.EXPORT, KEY_A).iterdir())
    removed = store.prune(limit=2 * one)
    assert removed == [f"export/{KEY_B}"] and store.get(Stage.EXPORT, KEY_A).state == CacheState.HIT
    assert store.get(Stage.EXPORT, KEY_C).state == CacheState.HIT
    assert store.alarmed(Stage.TRANSFORM, KEY_A) is not None


def test_temporary_folders_of_dead_writers_are_cleared(store, tmp_path):
    store.put(Stage.EXPORT, KEY_A, writer(graph(tmp_path / "g")), DIGEST_1, {})
    stale, fresh = store.root / "export" / ".tmp-dead", store.root / "export" / ".tmp-writing"
    stale.mkdir()
    fresh.mkdir()
    os.utime(stale, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    store.prune()
    assert not stale.exists() and fresh.exists()


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "here"))
    assert store_dir() == tmp_path / "here"
    for off in ("off", "", "none"):
        monkeypatch.setenv("PARITY_GATE_CACHE_DIR", off)
        assert store_dir() is None
    monkeypatch.delenv("PARITY_GATE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert store_dir() == tmp_path / "xdg" / "parity-gate"


def test_a_file_its_reader_proves_is_recorded_by_size_and_read_only_by_that_reader(store, tmp_path):
    """A graph's weights file is hashed by the graph's digest (``Output.proves``), never by the store too:
    recorded without a sha256, it reads back only for a caller that proves it, and its size still counts."""
    path = graph(tmp_path / "g")
    store.put(Stage.EXPORT, KEY_A, writer(path, b"\x00\x01"), DIGEST_1, {}, proven=frozenset({"extra.bin"}))
    folder = store.folder(Stage.EXPORT, KEY_A)
    files = json.loads((folder / MANIFEST).read_text())["files"]
    assert files["extra.bin"] == {"size": 2} and len(files["model.onnx"]["sha256"]) == 64
    (folder / "extra.bin").write_bytes(b"\x07\x07")  # other bytes: for the reader to tell, not the store
    found = store.get(Stage.EXPORT, KEY_A, frozenset({"extra.bin"}))
    assert found.state == CacheState.HIT and found.entry.path("extra.bin").read_bytes() == b"\x07\x07"
    (folder / "extra.bin").write_bytes(b"\x07")  # shorter: the store's check still
    assert store.get(Stage.EXPORT, KEY_A, frozenset({"extra.bin"})).state == CacheState.CORRUPT
    store.put(Stage.EXPORT, KEY_A, writer(path, b"\x00\x01"), DIGEST_1, {}, proven=frozenset({"extra.bin"}))
    found = store.get(Stage.EXPORT, KEY_A)  # a reader that does not prove it: no sha256 to trust
    assert found.state == CacheState.CORRUPT and "files.extra.bin malformed" in found.note


def test_a_put_over_an_entry_its_stage_finds_damaged_replaces_it_without_an_alarm(store, tmp_path):
    """The stage's own comparison may find the stored entry not what it records (``Corrupt``: a file the
    store records by size only): damage, not a second output. The entry is replaced, no alarm raised."""
    from gate.store import Corrupt

    path = graph(tmp_path / "g")
    proven = frozenset({"extra.bin"})
    store.put(Stage.EXPORT, KEY_A, writer(path, b"\x00\x01"), DIGEST_1, {"n": 1}, proven=proven)

    def damaged(entry) -> str | None:
        raise Corrupt("extra.bin: not the bytes its payload's digest records")

    put = store.put(Stage.EXPORT, KEY_A, writer(path, b"\x00\x02"), DIGEST_1, {"n": 2}, damaged,
                    proven=proven)
    assert put.state == PutState.STORED and put.alarm is None and store.alarmed(Stage.EXPORT, KEY_A) is None
    found = store.get(Stage.EXPORT, KEY_A, proven)
    assert found.entry.payload == {"n": 2} and found.entry.path("extra.bin").read_bytes() == b"\x00\x02"

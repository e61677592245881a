"""The export cache (gate/export/cache.py) on real files and a real ONNX graph: whole entries or
none, every check a reader makes, least recently used entries pruned first."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gate.core.status import CacheState
from gate.export.cache import MANIFEST, ExportCache, cache_dir

KEY_A, KEY_B, KEY_C = "a" * 64, "b" * 64, "c" * 64


def graph(folder: Path, scale: float = 2.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], np.full(4, scale, np.float32).tolist())
    node = helper.make_node("Mul", ["x", "w"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w])
    path = folder / "model.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


@pytest.fixture
def cache(tmp_path) -> ExportCache:
    return ExportCache(tmp_path / "cache")


def test_an_entry_reads_back_as_stored(cache, tmp_path):
    outputs = [np.arange(6, dtype=np.float64).reshape(2, 3)]
    assert cache.store(KEY_A, graph(tmp_path / "g"), {"exporter": "dynamo"}, outputs)
    found = cache.lookup(KEY_A)
    assert found.state == CacheState.HIT and found.entry.payload == {"exporter": "dynamo"}
    assert found.entry.model.read_bytes() == (tmp_path / "g" / "model.onnx").read_bytes()
    np.testing.assert_array_equal(found.entry.outputs()[0], outputs[0])
    assert cache.lookup(KEY_B).state == CacheState.MISS


def test_an_entry_without_outputs_says_so(cache, tmp_path):
    cache.store(KEY_A, graph(tmp_path / "g"), {})
    assert cache.lookup(KEY_A).entry.has_outputs is False


def _damage(folder: Path, how: str) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    if how == "manifest of another key":
        manifest["key"] = KEY_B
    elif how == "manifest of another format":
        manifest["format"] = "something/else"
    elif how == "a file it does not list":
        manifest["files"]["evil.bin"] = {"size": 1, "sha256": "0" * 64}
    elif how == "a longer graph":
        (folder / "model.onnx").write_bytes((folder / "model.onnx").read_bytes() + b"\0")
    elif how == "same size, other bytes":
        data = bytearray((folder / "model.onnx").read_bytes())
        data[-1] ^= 1
        (folder / "model.onnx").write_bytes(bytes(data))
    elif how == "no payload":
        del manifest["payload"]
    elif how == "not JSON":
        (folder / MANIFEST).write_bytes(b"\xff\xfe")
        return
    elif how == "no manifest":
        (folder / MANIFEST).unlink()
        return
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("how", ["manifest of another key", "manifest of another format", "a file it does not list",
                                 "a longer graph", "same size, other bytes", "no payload", "not JSON", "no manifest"])
def test_a_damaged_entry_is_corrupt_and_removed(cache, tmp_path, how):
    cache.store(KEY_A, graph(tmp_path / "g"), {})
    _damage(cache.folder(KEY_A), how)
    found = cache.lookup(KEY_A)
    assert found.state == CacheState.CORRUPT and found.entry is None and found.note.startswith("entry aaaaaaaaaaaa:")
    assert not cache.folder(KEY_A).exists()
    assert cache.store(KEY_A, graph(tmp_path / "g"), {}) and cache.lookup(KEY_A).state == CacheState.HIT


def test_a_manifest_over_the_limit_is_refused_before_it_is_read(cache, tmp_path, monkeypatch):
    cache.store(KEY_A, graph(tmp_path / "g"), {})
    size = (cache.folder(KEY_A) / MANIFEST).stat().st_size
    monkeypatch.setattr("gate.export.cache.MANIFEST_MAX", size)
    assert cache.lookup(KEY_A).state == CacheState.HIT  # at the limit
    cache.store(KEY_A, graph(tmp_path / "g"), {})
    monkeypatch.setattr("gate.export.cache.MANIFEST_MAX", size - 1)
    found = cache.lookup(KEY_A)
    assert found.state == CacheState.CORRUPT and "limit" in found.note


def test_a_key_that_is_not_one_is_refused(cache):
    with pytest.raises(ValueError):
        cache.folder("../../etc")


def test_the_least_recently_used_entries_go_first(cache, tmp_path):
    path = graph(tmp_path / "g")
    for i, key in enumerate((KEY_A, KEY_B, KEY_C)):
        cache.store(key, path, {}, [np.zeros(1000)])
        os.utime(cache.folder(key) / MANIFEST, (time.time() - 100 + i, time.time() - 100 + i))
    cache.lookup(KEY_A)  # used now: the newest
    one = sum(p.stat().st_size for p in cache.folder(KEY_A).iterdir())
    removed = cache.prune(limit=2 * one)
    assert removed == [KEY_B] and cache.lookup(KEY_A).state == CacheState.HIT
    assert cache.lookup(KEY_C).state == CacheState.HIT


def test_temporary_folders_of_dead_writers_are_cleared(cache, tmp_path):
    cache.store(KEY_A, graph(tmp_path / "g"), {})
    stale, fresh = cache.exports / ".tmp-dead", cache.exports / ".tmp-writing"
    stale.mkdir()
    fresh.mkdir()
    os.utime(stale, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    cache.prune()
    assert not stale.exists() and fresh.exists()


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "here"))
    assert cache_dir() == tmp_path / "here"
    for off in ("off", "", "none"):
        monkeypatch.setenv("PARITY_GATE_CACHE_DIR", off)
        assert cache_dir() is None
    monkeypatch.delenv("PARITY_GATE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "parity-gate"

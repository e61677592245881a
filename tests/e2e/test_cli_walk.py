"""Every command, given a missing file, a folder, an empty file or a bad name where it wants a file or
a name: one line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, run_cli

CONFIG = str(ROOT / "pyproject.toml")
CASES = [
    (("check", "--config", "missing.toml"), "config file `missing.toml` does not exist"),
    (("check", "--config", "folder"), "config file `folder` is a folder"),
    (("check", "--config", "empty.toml"), "`models`: no models or sweeps configured"),
    (("check", "--config", CONFIG, "--model", "nope"), "no model matches `nope`"),
    (("check", "--config", CONFIG, "--provider", "nope"), "unknown provider `nope`"),
    (("update-baseline", "--config", "folder"), "is a folder"),
    (("update-baseline", "--config", CONFIG, "--model", "nope"), "no model matches `nope`"),
    (("export", "--out", "out", "--config", "empty.toml"), "no models or sweeps configured"),
    (("collect", "--from", "missing", "--out", "r.msgpack.zst", "--provider", "cpu"), "(it does not exist)"),
    (("collect", "--from", "folder", "--out", "r.msgpack.zst", "--provider", "cpu"), "holds no exported model"),
    (("collect", "--from", "empty.toml", "--out", "r.msgpack.zst", "--provider", "cpu"), "is not a folder written"),
    (("collect", "--from", "folder", "--out", "r.msgpack.zst", "--provider", "nope"), "unknown provider `nope`"),
    (("report", "missing.msgpack.zst", "--config", CONFIG), "result file `missing.msgpack.zst`: does not exist"),
    (("report", "folder", "--config", CONFIG), "`folder` holds no result files"),
    (("report", "empty.msgpack.zst", "--config", CONFIG), "result file `empty.msgpack.zst`: file is empty"),
    (("list", "--config", "missing.toml"), "does not exist"),
    (("list", "--config", CONFIG, "--model", "nope*"), "no model matches `nope*`"),
    (("validate", "--config", "empty.toml"), "no models or sweeps configured"),
    (("show", "missing.msgpack.zst"), "`missing.msgpack.zst`: no such file"),
    (("show", "folder"), "baseline `folder`: not a regular file"),
    (("show", "empty.msgpack.zst"), "baseline `empty.msgpack.zst`: file is empty"),
    (("show", "nope", "--config", CONFIG), "configures no model of that name"),
    (("comment", "--report", "missing.json"), "report `missing.json`: no such file"),
    (("comment", "--report", "folder"), "report `folder`: cannot read"),
    (("comment", "--report", "empty.json"), "report `empty.json`: not JSON"),
    (("merge", "missing.json", "--shards", "2"), "report `missing.json`: no such file"),
    (("merge", "empty.json", "--shards", "2"), "report `empty.json`: not JSON"),
    (("merge", "folder", "--shards", "2"), "no report of any of the 2 shards to merge"),
    (("check", "--config", CONFIG, "--shard", "3/2"), "--shard 3/2: shard 3 of 2 does not exist (1 to 2)"),
    (("list", "--config", CONFIG, "--shard", "2"), "--shard '2': expected K/N, shard K of N (e.g. 2/4)"),
    (("add", "--factory", "m:f", "--input", "x=2", "--config", "folder", "--no-baseline"), "is a folder"),
    (("add", "--factory", "m:f", "--input", "x=2", "--config", CONFIG, "--name", "Bad Name", "--no-baseline"),
     "model name `Bad Name`"),
    (("init", "--factory", "bad", "--input", "x=2", "--yes", "--no-baseline"), "factory `bad`: expected module:callable"),
    (("init", "--factory", "m:f", "--input", "x=2", "--yes", "--no-baseline", "--flow", "gpu", "--shards", "4"),
     "--shards 4: the gpu flow exports once and collects per runner"),
]


@pytest.mark.parametrize("args, message", CASES, ids=[" ".join(a[:2]) + f" #{i}" for i, (a, _) in enumerate(CASES)])
def test_a_bad_argument_is_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "folder").mkdir()
    for name in ("empty.toml", "empty.msgpack.zst", "empty.json"):
        (tmp_path / name).write_bytes(b"")
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr

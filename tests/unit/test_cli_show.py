"""``parity-gate show``: a file or a configured model's name; every bad argument is one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.projects import examples_project


def show(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gate.cli", "show", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def test_a_model_name_shows_its_baseline(tmp_path):
    examples_project(tmp_path, baselines=True)
    by_name, by_file = show("tiny-cnn", cwd=tmp_path), show("baselines/tiny-cnn.msgpack.zst", cwd=tmp_path)
    assert by_name.returncode == 0 and by_name.stdout == by_file.stdout and "model tiny-cnn" in by_name.stdout


@pytest.mark.parametrize("arg, message", [
    ("missing.msgpack.zst", "error: `missing.msgpack.zst`: no such file"),
    ("baselines", "error: baseline `baselines`: not a regular file"),
    ("empty.msgpack.zst", "error: baseline `empty.msgpack.zst`: file is empty"),
    ("no-such-model", "error: `no-such-model`: no such file, and "),
    ("../outside/x.msgpack.zst", "error: `../outside/x.msgpack.zst`: no such file"),
])
def test_every_bad_argument_is_one_line_and_exit_2(tmp_path, arg, message):
    examples_project(tmp_path, baselines=True)
    (tmp_path / "empty.msgpack.zst").write_bytes(b"")
    proc = show(arg, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr


def test_a_model_without_a_baseline_says_how_to_create_it(tmp_path):
    examples_project(tmp_path)
    proc = show("tiny-cnn", cwd=tmp_path)
    assert proc.returncode == 2
    assert "model `tiny-cnn` has no baseline yet" in proc.stderr and "update-baseline --model tiny-cnn" in proc.stderr


def test_people_get_folded_lines_and_git_one_line_per_layer(tmp_path):
    examples_project(tmp_path, baselines=True)
    people = show("--all", "tiny-transformer", cwd=tmp_path).stdout.splitlines()
    git = show("--all", "--textconv", "baselines/tiny-transformer.msgpack.zst",
               cwd=tmp_path).stdout.splitlines()
    assert max(map(len, git)) > 300 and sum(line.startswith("layer ") for line in git) > 10
    assert all(len(line) <= 120 or " " not in line.strip() for line in people)  # a fold never splits a number
    assert " ".join(x.strip() for x in people) == " ".join(git)  # the same text, folded


def git_diff(*args: str, cwd) -> subprocess.CompletedProcess:
    """``parity-gate git-diff`` as git runs it: the path, then each side's file, hash and mode."""
    return subprocess.run([sys.executable, "-m", "gate.cli", "git-diff", *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def test_git_diff_driver_takes_gits_seven_arguments_and_a_missing_side(tmp_path):
    examples_project(tmp_path, baselines=True)
    new = "baselines/tiny-cnn.msgpack.zst"
    added = git_diff(new, os.devnull, ".", ".", new, "abc", "100644", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    lines = added.stdout.splitlines()
    assert lines[:4] == [f"diff --git a/{new} b/{new}", f"--- a/{new}", f"+++ b/{new}", lines[3]]
    assert lines[3].startswith("new baseline: 22 layers, providers: ")
    assert lines[4].startswith("+parity-gate baseline")
    gone = git_diff(new, new, "abc", "100644", os.devnull, ".", ".", cwd=tmp_path).stdout.splitlines()
    assert gone[3] == "baseline deleted" and gone[4].startswith("-parity-gate")

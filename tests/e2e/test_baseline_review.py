"""What a reviewer reads of a re-recorded baseline: the bundled tiny-cnn, recorded, then block1.bn2's eps
changed (1e-5 to 1e-3, weights untouched) and recorded again. Real update-baseline, real git, the driver
(external diff for git diff, textconv for the rest) as `parity-gate diff-driver` sets it in a repository
that had no .gitattributes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gate.commands import changed_baselines
from gate.config import load_config
from gate.scaffold.diff_driver import diff_command
from tests.conftest import run_cli
from tests.support.projects import examples_project

BASELINE = "baselines/tiny-cnn.msgpack.zst"
BEFORE = "block1.bn2"  # the layer the change moves first; every layer before it holds


def git(root, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root,
                          check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}).stdout


@pytest.fixture(scope="module")
def changed(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    examples_project(root)
    git(root, "init", "-q")
    driver = run_cli("diff-driver", cwd=root)
    recorded = run_cli("update-baseline", "--model", "tiny-cnn", cwd=root)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    git(root, "add", "-A")
    git(root, "commit", "-qm", "baseline")
    zoo = root / "examples" / "zoo.py"
    text = zoo.read_text()
    old = "def tiny_cnn() -> nn.Module:\n    return init_by_name(TinyCNN())"
    assert old in text
    zoo.write_text(text.replace(old, "def tiny_cnn() -> nn.Module:\n    model = init_by_name(TinyCNN())\n"
                                     "    model.block1.bn2.eps = 1e-3\n    return model"))
    update = run_cli("update-baseline", "--model", "tiny-cnn", cwd=root)
    assert update.returncode == 0, update.stdout + update.stderr
    return root, driver, update


def test_diff_driver_writes_the_missing_gitattributes_line_and_says_so(changed):
    root, driver, _ = changed
    assert driver.returncode == 0, driver.stdout + driver.stderr
    assert "*.msgpack.zst diff=parity-gate" in (root / ".gitattributes").read_text()
    assert "created .gitattributes: `*.msgpack.zst diff=parity-gate`" in driver.stdout
    assert "DIFF DRIVER SET" in driver.stdout


def test_git_diff_of_a_one_layer_eps_change_says_what_moved_then_the_moved_layers(changed):
    root, _, update = changed
    assert f"reference moved on 14 layers (first: {BEFORE} by " in update.stdout
    assert git(root, "config", "diff.parity-gate.command").strip() == diff_command(sys.executable)
    lines = git(root, "diff", "--", BASELINE).splitlines()
    assert lines[:3] == [f"diff --git a/{BASELINE} b/{BASELINE}", f"--- a/{BASELINE}", f"+++ b/{BASELINE}"]
    assert lines[3].startswith(f"reference moved on 14 layers (first: {BEFORE} by "), lines
    assert len(lines) <= 60, lines
    moved = [line.split()[1] for line in lines if line.startswith(("-layer ", "+layer "))]
    assert moved[:2] == [BEFORE, BEFORE] and len(moved) == 2 * 14  # each layer's old line above its new one


def test_git_diff_through_textconv_alone_is_short_and_starts_at_the_layer(changed):
    """git log -p and git show convert each side alone: the compact lines keep that diff short too."""
    root, _, _ = changed
    diff = git(root, "diff", "--no-ext-diff", "--", BASELINE)
    lines = diff.splitlines()
    assert "Binary files" not in diff and len(lines) <= 60, diff
    moved = [line.split()[1] for line in lines if line.startswith(("-layer ", "+layer "))]
    # git: the old lines, then the new ones
    assert moved[0] == BEFORE and moved.count(BEFORE) == 2 and len(moved) == 2 * 14
    assert not {"stem.0", "block1.bn1", "block1.conv2"} & set(moved)
    assert all(len(line) < 200 or line.startswith(" provider ") for line in lines), diff


def test_the_comment_text_starts_with_what_moved_then_the_moved_layers(changed):
    root, _, _ = changed
    git(root, "add", "-A")
    _, texts = changed_baselines(load_config(root / "pyproject.toml"), "HEAD")
    lines = texts[BASELINE].splitlines()
    assert lines[0].startswith(f"reference moved on 14 layers (first: {BEFORE} by ")
    assert "graph changed, weights and inputs the same" in lines[0]
    layers = [line.split()[1] for line in lines if line.startswith(("-layer ", "+layer "))]
    assert layers[:2] == [BEFORE, BEFORE] and len(layers) == 2 * 14

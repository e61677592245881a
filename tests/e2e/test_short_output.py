"""What a reviewer reads, measured on real runs of the bundled examples (three models: the two
examples and tiny-cnn again under another name, each recorded here): a passing check prints one line
per stage and at most ten lines per model; a pull request that changes one model of the three gets a
comment with at most 40 lines outside ``<details>``, naming the model, its first layer and its next
step; ``--verbose`` brings the rest back."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.conftest import run_cli
from tests.e2e import faults
from tests.support.projects import examples_project

THIRD = ('\n[[tool.parity-gate.models]]\nname = "tiny-cnn-2"\nfactory = "examples.zoo:tiny_cnn"\n'
         'inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]\n')
MODELS = ("tiny-cnn", "tiny-transformer", "tiny-cnn-2")
COMMENT_LINES, MODEL_LINES = 40, 10


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("short")
    path = examples_project(tmp)
    path.write_text(path.read_text() + THIRD)
    shutil.copy(faults.__file__, tmp / "faults.py")
    proc = run_cli("update-baseline", cwd=tmp)  # this machine's entries: every model passes here
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp


def outside_details(markdown: str) -> list[str]:
    """The lines a reader sees before opening anything: those outside every ``<details>`` block."""
    out, depth = [], 0
    for line in markdown.splitlines():
        depth += line.count("<details")
        if depth == 0:
            out.append(line)
        depth -= line.count("</details>")
    return out


def model_lines(stdout: str, stderr: str, name: str) -> list[str]:
    """What the console prints for one model: its block of the report and its stage lines."""
    blocks = stdout.split("\n\n")
    block = next(b for b in blocks if b.startswith(f"{name}  ·  "))
    return block.strip().splitlines() + [line for line in stderr.splitlines() if f" {name}: " in f" {line}"]


def test_a_passing_check_prints_one_line_per_stage_and_a_few_lines_per_model(project):
    proc = run_cli("check", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stages = [line for line in proc.stderr.splitlines() if re.search(r" — \d+\.\d s$", line)]
    assert len(stages) >= 3 * len(MODELS)
    starts = [line for line in proc.stderr.splitlines() if line.startswith("· ")]
    assert not starts, proc.stderr  # a stage is said once, when it ends
    for name in MODELS:
        lines = model_lines(proc.stdout, proc.stderr, name)
        assert len(lines) <= MODEL_LINES, "\n".join(lines)
    assert "❌" not in proc.stdout and "not allclose" not in proc.stdout


def test_verbose_brings_the_rest_back(project):
    proc = run_cli("check", "--verbose", "--model", "tiny-cnn", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "· tiny-cnn: building" in proc.stderr and "  tiny-cnn: building — " in proc.stderr
    assert "first regression" in proc.stdout and "output (model) on CPUExecutionProvider" in proc.stdout


def test_one_changed_model_of_three_fits_on_a_screen(project):
    config = project / "pyproject.toml"
    text = config.read_text()
    changed = text.replace('factory = "examples.zoo:tiny_cnn"\n', 'factory = "faults:cnn_bn_eps"\n', 1)
    config.write_text(changed)
    try:
        proc = run_cli("check", "--markdown", "comment.md", cwd=project)
    finally:
        config.write_text(text)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    comment = (project / "comment.md").read_text()
    seen = outside_details(comment)
    assert len(seen) <= COMMENT_LINES, "\n".join(seen)
    shown = "\n".join(seen)
    assert "`tiny-cnn` regressed at layer `block1.bn2`" in shown  # the model, and its first layer
    assert "run `parity-gate update-baseline --model tiny-cnn`" in shown  # its next step
    assert "<b>tiny-transformer</b>" in comment and "<b>tiny-cnn-2</b>" not in shown

"""A model that fails in the user's own code says where: the file, line and function of the innermost
frame that is the user's, in the console, the JSON report and the comment; ``--debug`` adds the
whole traceback. Real models, a real CLI process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.core.fields import Obj
from gate.render import render_markdown
from gate.verdict.types import Report
from tests.conftest import run_cli
from tests.support import tools

MODELS = '''import torch


class Boom(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return helper(self.lin(x))


def helper(y):
    raise ValueError("the sizes do not add up")


def boom():
    return Boom()


def broken():
    raise RuntimeError("no weights here")
'''
CONFIG = '''[tool.parity-gate]
providers = ["torch-cpu", "CPUExecutionProvider"]

[[tool.parity-gate.models]]
name = "boom"
factory = "models:boom"
inputs = [{ name = "x", shape = [2, 4], dtype = "float32" }]

[[tool.parity-gate.models]]
name = "broken"
factory = "models:broken"
inputs = [{ name = "x", shape = [2, 4], dtype = "float32" }]
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("frames")
    (root / "models.py").write_text(MODELS)
    (root / "pyproject.toml").write_text(CONFIG)
    return root


def test_the_users_frame_is_named_everywhere(project):
    proc = run_cli("check", "--json", "r.json", "--junit", "r.xml", cwd=project)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "at models.py:14 in helper" in proc.stdout and "at models.py:22 in broken" in proc.stdout
    assert "--debug shows the traceback" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1].endswith("(at models.py:14 in helper)")
    report = json.loads((project / "r.json").read_text())
    errors = {m["name"]: m["error"] for m in report["models"]}
    assert errors["boom"]["status"] == "INFER_FAIL" and errors["boom"]["where"] == "models.py:14 in helper"
    assert errors["broken"]["status"] == "BUILD_FAIL" and errors["broken"]["where"] == "models.py:22 in broken"
    assert "trace" not in errors["boom"]
    # A model that crashed computed nothing: no line claims a reference or an export, and its next step
    # reproduces the crash (re-recording a baseline cannot fix it).
    assert "float64 reference computed" not in proc.stdout and "exported (" not in proc.stdout
    assert "next: it failed (INFER_FAIL). Reproduce with `parity-gate check --model boom`" in proc.stdout
    steps = {m["name"]: m["next_step"] for m in report["models"]}
    assert steps["boom"] == {"kind": "model-failed", "command": "parity-gate check --model boom",
                             "error_status": "INFER_FAIL"}
    assert "reuse" not in report["models"][0]
    xmlschema = tools.module("xmlschema")
    schema = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "data" / "junit" / "junit.xsd"))
    junit = (project / "r.xml").read_text()
    schema.validate(junit)
    assert 'type="INFER_FAIL"' in junit and "next: it failed (INFER_FAIL). Reproduce with `parity-gate check --model " \
        "boom`" in junit
    comment = render_markdown(Report.from_dict(Obj(report, "r.json")))
    assert "(at `models.py:14 in helper`)" in comment


def test_debug_prints_the_whole_traceback(project):
    proc = run_cli("--debug", "check", "--model", "boom", "--json", "d.json", cwd=project)
    assert proc.returncode == 3
    assert "Traceback (most recent call last)" in proc.stdout and 'raise ValueError("the sizes do not add up")' in \
        proc.stdout
    error = json.loads((project / "d.json").read_text())["models"][0]["error"]
    assert error["trace"].startswith("Traceback") and "ValueError: the sizes do not add up" in error["trace"]

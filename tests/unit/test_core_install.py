"""What a core install (``pip install parity-gate``: no torch, onnx, onnxscript, onnx-ir or onnxruntime)
runs: the judging side, comments and result-file merges. Its modules import in a process where those
packages cannot be imported, and a report is judged and rendered there. (tests/e2e/test_package.py
checks the built wheel the same way, where a wheelhouse exists.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "onnx", "onnxscript", "onnx_ir", "onnxruntime")
BLOCKER = f'''
import sys


class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HEAVY!r}:
            raise ImportError(f"No module named {{name!r}} (absent from a core install)")
        return None


sys.meta_path.insert(0, _Absent())
'''
CORE = ("gate.cli.app", "gate.cli.github_cmds", "gate.commands", "gate.pipeline.stages", "gate.pipeline.prepare",
        "gate.github.publish", "gate.render.markdown", "gate.store", "gate.export.record", "gate.verdict.report_file")


def test_the_judging_side_imports_and_renders_without_torch_or_onnx(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    code = ("import importlib\n"
            f"for m in {CORE!r}: importlib.import_module(m)\n"
            "from gate.verdict.report_file import load_report\n"
            "from gate.render.markdown import render_markdown\n"
            f"report = load_report({str(ROOT / 'tests' / 'data' / 'reports' / 'regressed.json')!r})\n"
            "print(len(render_markdown(report)) > 100)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True"]

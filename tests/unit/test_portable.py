"""``import gate`` and the CPU gate need no POSIX-only module: Windows runners have neither
``fcntl`` nor ``resource``. The import and file-locking tests run again in processes where
those modules cannot be imported (a ``sitecustomize`` refuses them), so the lock falls back to
its portable form and every writer (the forked ones too) uses it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = '''
import sys


class _Unavailable:
    def find_spec(self, name, path=None, target=None):
        if name in ("fcntl", "resource"):
            raise ImportError(f"No module named {name!r} (made unavailable for this test)")
        return None


sys.meta_path.insert(0, _Unavailable())
'''

LIBRARY = ("gate", "gate.config", "gate.commands", "gate.formats.baseline", "gate.formats.results",
           "gate.verdict.report_file", "gate.verdict.judge", "gate.render", "gate.github", "gate.runners.isolation",
           "gate.runners.worker", "gate.runners.onnxruntime", "gate.cli.app")


def _blocked_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}


def test_the_library_imports_without_fcntl_and_resource(tmp_path):
    code = ("import importlib, sys\n"
            f"for m in {LIBRARY!r}: importlib.import_module(m)\n"
            "import gate.formats.atomic as a, gate.runners.worker as w\n"
            "w._limit_memory(64)  # a budget is not enforceable here: no error\n"
            "print(a.fcntl, 'fcntl' in sys.modules and sys.modules['fcntl'] is not None)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_blocked_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "False"]


def test_file_locking_tests_pass_with_the_portable_lock(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_baseline_atomic.py"],
        cwd=ROOT, env=_blocked_env(tmp_path), capture_output=True, text=True, timeout=600)
    tail = proc.stdout.strip().splitlines()[-1:]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert tail and " passed" in tail[0] and "failed" not in tail[0], tail

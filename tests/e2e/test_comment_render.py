"""The PR comment rendered as GitHub renders it: GitHub-flavoured Markdown and the Mermaid charts,
in headless Chromium with Mermaid from npm (tests/support/comment_render.py). Every chart the
renderer writes must draw without a Mermaid error; a broken chart must be caught.

Needs Chromium and `npm ci --prefix tests/render` (scripts/test.sh installs both); skipped without
(failed under PARITY_GATE_REQUIRE_TOOLS=1, as in CI).
"""

from __future__ import annotations

import json

from gate.render import Links, render_markdown
from gate.verdict.report_file import load_report, parse_report
from tests.support import tools
from tests.support.comment_render import ROOT, missing, render

pytestmark = tools.needs(f"cannot render the comment here: {missing()}" if missing() else None)

REPORTS = ROOT / "tests" / "data" / "reports"
LINKS = Links("https://github.com/octo/models/actions/runs/4242", None, "a" * 40,
              "https://github.com/octo/models/commit/" + "a" * 40, "run 4242", "check on Linux X64")


def comment(name: str) -> str:
    return render_markdown(load_report(REPORTS / f"{name}.json"), marker="<!-- m -->", links=LINKS)


def test_the_regressed_comment_draws_its_chart_without_a_mermaid_error(tmp_path):
    shown = render(comment("regressed"), tmp_path)
    assert shown.status == "ok", shown.message
    assert shown.charts == 1 and shown.error_svgs == 0
    assert shown.plots == 2  # measured error and threshold
    page = shown.html.read_text()
    assert "<table>" in page and "<details open>" in page and 'class="markdown-alert"' in page


def test_a_report_written_by_check_draws_a_chart_per_regressed_model(tmp_path):
    text = comment("real-check-reference-drift")
    shown = render(text, tmp_path)
    assert shown.status == "ok", shown.message
    assert shown.charts == text.count("```mermaid") == 2 and shown.error_svgs == 0


def test_a_bucketed_chart_of_a_long_model_draws(tmp_path):
    doc = json.loads((REPORTS / "regressed.json").read_text())
    cpu = doc["models"][0]["providers"][1]
    cpu["layers"] = [{"layer": f"blocks.{i}", "type": "Linear", "status": "fail" if i > 700 else "pass",
                      "check": "error-growth", "value": 1e-3 if i > 700 else 1e-7, "threshold": 1e-6,
                      "baseline": 1e-7, "message": None} for i in range(1000)]
    text = render_markdown(parse_report(json.dumps(doc).encode(), "long"), links=LINKS)
    assert "1 --> 1000" in text
    shown = render(text, tmp_path)
    assert shown.status == "ok" and shown.charts == 1, shown.message


def test_a_broken_chart_is_reported_as_a_mermaid_error(tmp_path):
    broken = "### chart\n\n```mermaid\nxychart-beta\n    line [1, 2, oops]\n```\n"
    shown = render(broken, tmp_path)
    assert shown.status == "error"
    assert "Parse error on line 2" in shown.message  # Mermaid's own words, as the page caught them

"""gate.cli.github_cmds: the `comment` command, registered on a bare Typer app."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from gate.cli.github_cmds import register

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"


def app() -> typer.Typer:
    a = typer.Typer()

    @a.callback()
    def main() -> None:  # keep `comment` a subcommand
        pass

    register(a)
    return a


def invoke(*args: str, **env: str):
    base = {"GITHUB_EVENT_NAME": "push", "GITHUB_TOKEN": "", "GITHUB_STEP_SUMMARY": "", "GITHUB_OUTPUT": ""}
    return CliRunner().invoke(app(), ["comment", *args], env={**base, **env})


def test_regression_exits_1_with_a_verdict_line(tmp_path):
    summary = tmp_path / "summary.md"
    r = invoke("--report", str(REPORTS / "regressed.json"), GITHUB_STEP_SUMMARY=str(summary))
    assert r.exit_code == 1
    assert r.output.splitlines()[-1] == (
        "FAILED | tiny-cnn: layer conv2 on CPUExecutionProvider failed error-growth (0.0042 > 2.76e-06)")
    assert "PR comment not written: event `push` is not about a pull request" in r.output
    assert "regressed at layer `conv2`" in summary.read_text()


def test_pass_exits_0():
    r = invoke("--report", str(REPORTS / "pass.json"))
    assert r.exit_code == 0 and r.output.splitlines()[-1] == "PASSED | 1 model, 8 layers"


def test_missing_report_is_one_line_exit_2(tmp_path):
    r = invoke("--report", str(tmp_path / "nope.json"))
    assert r.exit_code == 2
    assert r.output.strip() == f"error: report `{tmp_path / 'nope.json'}`: no such file"


def test_options_come_from_the_environment(tmp_path):
    out = tmp_path / "comment.md"
    r = invoke(PARITY_GATE_REPORT=str(REPORTS / "export-fail.json"), PARITY_GATE_FAIL_ON="never",
               PARITY_GATE_MARKDOWN=str(out), PARITY_GATE_CONFIG="./models/vision.toml")
    assert r.exit_code == 0
    assert out.read_text().startswith("<!-- parity-gate:comment id=models/vision.toml -->\n")


def test_bad_when_is_a_usage_error():
    assert invoke("--report", str(REPORTS / "pass.json"), "--when", "sometimes").exit_code == 2


def test_a_forks_hostile_report_is_one_line_exit_2(tmp_path):
    """The fork-safe flow comments from a report a fork's run wrote: depth bombs and forged
    fields are refused in one line, nothing is posted."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    r = invoke("--report", str(deep))
    assert r.exit_code == 2 and r.output.strip() == f"error: report `{deep}`: nested deeper than 64 levels"
    forged = tmp_path / "forged.json"
    doc = json.loads((REPORTS / "regressed.json").read_text())
    doc["first_regression"] = {"layer": 5, "model": None}
    forged.write_text(json.dumps(doc))
    r = invoke("--report", str(forged))
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "`first_regression.layer`: expected a string, got a number" in r.output and "None" not in r.output


def test_the_status_command_takes_exactly_the_states_publish_posts():
    from gate.cli.github_cmds import JobState
    from gate.github.publish import JOB_STATES

    assert {s.value for s in JobState} == set(JOB_STATES)

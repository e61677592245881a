"""The action's check and matrix (collect -> report) flows, with stand-ins for check/collect/report."""

from __future__ import annotations

import ast
import json

from tests.support import action_fixtures
from tests.support.action_fixtures import PR, REPO, REPORTS, TOKEN

github = action_fixtures.github  # fixtures
make_runner = action_fixtures.make_runner


def calls(log) -> list[tuple[list[str], dict]]:
    return [ast.literal_eval(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_check_mode_runs_check_uploads_the_report_and_comments(make_runner, github, tmp_path):
    log = tmp_path / "calls.log"
    runner = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "regressed.json"), PARITY_GATE_STUB_EXIT="1",
                         PARITY_GATE_STUB_LOG=str(log))
    run = runner.run({"mode": "check", "config": "gate.toml", "models": "tiny-cnn, tiny-mlp", "providers": "CPUExecutionProvider"},
                     token=TOKEN)
    assert run.returncode == 1, run.log
    [(argv, env)] = calls(log)
    assert argv[0] == "check" and "--json" in argv and "--markdown" in argv
    assert env["PARITY_GATE_MODELS"] == "tiny-cnn, tiny-mlp" and env["PARITY_GATE_CONFIG"] == "gate.toml"
    assert (tmp_path / "artifacts" / "parity-gate-report" / "report.json").exists()
    [c] = github.issue_comments(REPO, PR)
    assert c["body"].startswith("<!-- parity-gate:comment id=gate.toml -->")
    assert "/artifacts/" in c["body"]  # links to the uploaded report
    assert run.outputs["verdict"] == "regressed"
    assert "::group::parity-gate check" in run.stdout


def test_check_that_writes_no_report_fails_with_its_exit_code(make_runner, github):
    run = make_runner(PARITY_GATE_STUB_EXIT="2").run({"mode": "check"}, token=TOKEN)
    assert run.returncode == 2
    assert "check exited 2 without writing a report" in run.stdout
    assert run.step("comment").conclusion == "skipped" and github.requests == []


def test_matrix_collect_legs_upload_unique_artifacts_and_report_aggregates_them(make_runner, github, tmp_path):
    log = tmp_path / "calls.log"
    for runner_name, providers in (("cpu-1", "CPUExecutionProvider"), ("gpu-1", "CUDAExecutionProvider")):
        leg = make_runner(PARITY_GATE_STUB_LOG=str(log))
        leg.runner_name = runner_name
        run = leg.run({"mode": "collect", "providers": providers}, token=TOKEN)
        assert run.returncode == 0, run.log
        assert run.outputs["artifact-name"].startswith(f"parity-gate-result-gate-{runner_name}-{providers}-")
    names = sorted(p.name for p in (tmp_path / "artifacts").iterdir())
    assert len(names) == 2
    assert [argv[0] for argv, _ in calls(log)] == ["export", "collect", "export", "collect"]

    final = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"), PARITY_GATE_STUB_LOG=str(log))
    run = final.run({"mode": "report", "comment": "always"}, token=TOKEN)
    assert run.returncode == 0, run.log
    argv, _ = calls(log)[-1]  # the comment step runs the real command, which is not logged
    files = [a.rsplit("/", 1)[-1] for a in argv[1:] if a.endswith(".msgpack.zst")]
    assert argv[0] == "report" and sorted(files) == sorted(f"{n}.msgpack.zst" for n in names)
    assert run.outputs["verdict"] == "pass"
    assert len(github.issue_comments(REPO, PR)) == 1


def test_same_artifact_name_twice_fails_the_second_leg(make_runner, github):
    first = make_runner().run({"mode": "collect", "artifact-name": "parity-gate-result-x"}, token=TOKEN)
    assert first.returncode == 0
    second = make_runner().run({"mode": "collect", "artifact-name": "parity-gate-result-x"}, token=TOKEN)
    assert second.returncode != 0


def test_update_baseline_mode_runs_only_update_baseline(make_runner, github, tmp_path):
    log = tmp_path / "calls.log"
    run = make_runner(PARITY_GATE_STUB_LOG=str(log)).run({"mode": "update-baseline", "models": "tiny-cnn"}, token=TOKEN)
    assert run.returncode == 0, run.log
    assert [argv[0] for argv, _ in calls(log)] == ["update-baseline"]
    assert run.outputs["verdict"] == "" and github.requests == []
    assert json.loads(json.dumps(run.outputs))  # all outputs resolved to strings

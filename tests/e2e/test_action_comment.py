"""The composite action, run step by step as a runner would, against a local fake GitHub.

Needs: bash, PyYAML. The `parity-gate` it runs is tests/support/cli_shim.py (the real `comment`
command; stand-ins for check/collect/report), handed in as the action's venv-path input.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import action_fixtures
from tests.support.action_fixtures import LEG, MARKER, PR, REPO, REPORTS, ROOT, TOKEN

github = action_fixtures.github  # fixtures
make_runner = action_fixtures.make_runner


def comment_mode(report: str, **inputs: str) -> dict[str, str]:
    return {"mode": "comment", "report-json": str(REPORTS / f"{report}.json"), **inputs}


def test_first_run_creates_one_comment_second_updates_it_then_pass_replaces_it(make_runner, github):
    runner = make_runner()
    first = runner.run(comment_mode("regressed"), token=TOKEN)
    assert first.returncode == 1, first.log
    [c] = github.issue_comments(REPO, PR)
    assert c["body"].startswith(MARKER)
    assert "regressed at layer `conv2` on `CPUExecutionProvider`" in c["body"]
    assert first.outputs["verdict"] == "regressed"
    assert first.outputs["first-layer"] == "conv2"
    assert first.outputs["first-provider"] == "CPUExecutionProvider"
    assert first.outputs["comment-id"] == str(c["id"])
    assert Path(first.outputs["report-markdown"]).read_text() == c["body"]
    assert "regressed at layer `conv2`" in first.summary
    assert "::error title=parity-gate%3A tiny-cnn regressed on CPUExecutionProvider (float32)::" in first.stdout
    assert "FAILED | tiny-cnn: layer conv2 on CPUExecutionProvider failed error-growth" in first.stdout

    second = runner.run(comment_mode("regressed"), token=TOKEN)
    assert second.returncode == 1
    assert len(github.issue_comments(REPO, PR)) == 1
    assert len(github.calls("PATCH")) == 1 and len(github.calls("POST", "/comments")) == 1

    fixed = runner.run(comment_mode("pass"), token=TOKEN)
    assert fixed.returncode == 0, fixed.log
    [c] = github.issue_comments(REPO, PR)
    assert "✅ parity-gate: passed" in c["body"]
    assert fixed.outputs["verdict"] == "pass" and fixed.outputs["first-layer"] == ""
    assert TOKEN not in first.log + second.log + fixed.log


def test_fail_on_never_exits_zero_on_a_regression(make_runner, github):
    run = make_runner().run(comment_mode("regressed", **{"fail-on": "never"}), token=TOKEN)
    assert run.returncode == 0
    assert run.outputs["verdict"] == "regressed"
    assert len(github.issue_comments(REPO, PR)) == 1


def test_failed_export_exits_3_and_names_the_model(make_runner, github):
    run = make_runner().run(comment_mode("export-fail"), token=TOKEN)
    assert run.returncode == 3
    [c] = github.issue_comments(REPO, PR)
    assert "EXPORT\\_FAIL" in c["body"] and "`resnet18`" in c["body"]


def test_auto_does_not_comment_on_a_pass_without_an_earlier_comment(make_runner, github):
    run = make_runner().run(comment_mode("pass"), token=TOKEN)
    assert run.returncode == 0
    assert github.issue_comments(REPO, PR) == []
    assert not github.calls("POST", "/comments")
    assert "✅ parity-gate: passed" in run.summary
    assert "PR comment not written: passed and no earlier comment" in run.stdout


def test_two_runs_racing_to_create_leave_one_comment(make_runner, github):
    # Another run creates its comment between our search and our create.
    github.on_post.append(lambda repo, n: github._new_comment(repo, n, MARKER + "\nother run", "github-actions[bot]"))
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1, run.log
    [c] = github.issue_comments(REPO, PR)
    assert "regressed at layer `conv2`" in c["body"]
    assert len(github.calls("DELETE")) == 1
    assert run.outputs["comment-id"] == str(c["id"])


def test_always_comments_on_a_pass_and_never_only_writes_the_summary(make_runner, github):
    runner = make_runner()
    assert runner.run(comment_mode("regressed", comment="never"), token=TOKEN).returncode == 1
    assert github.requests == []
    run = runner.run(comment_mode("pass", comment="always"), token=TOKEN)
    assert run.returncode == 0 and len(github.issue_comments(REPO, PR)) == 1


def test_on_change_leaves_an_unchanged_comment_alone(make_runner, github):
    runner = make_runner()
    runner.run(comment_mode("regressed", comment="on-change"), token=TOKEN)
    again = runner.run(comment_mode("regressed", comment="on-change"), token=TOKEN)
    assert not github.calls("PATCH")
    assert "PR comment unchanged" in again.stdout
    runner.run(comment_mode("pass", comment="on-change"), token=TOKEN)
    assert len(github.calls("PATCH")) == 1


def test_one_comment_per_config(make_runner, github):
    runner = make_runner()
    runner.run(comment_mode("regressed", config="models/vision.toml"), token=TOKEN)
    runner.run(comment_mode("regressed", config="models/audio.toml"), token=TOKEN)
    runner.run(comment_mode("regressed", config="models/vision.toml"), token=TOKEN)
    bodies = [c["body"].splitlines()[0] for c in github.issue_comments(REPO, PR)]
    assert bodies == [f"<!-- parity-gate:comment id=models/vision.toml@{LEG} -->",
                      f"<!-- parity-gate:comment id=models/audio.toml@{LEG} -->"]


def test_forbidden_comment_falls_back_to_the_job_summary(make_runner, github):
    github.inject("POST", r"/issues/7/comments$", 403, message="Resource not accessible by integration")
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1  # fail-on regression still decides, the 403 is not a crash
    assert github.issue_comments(REPO, PR) == []
    assert "regressed at layer `conv2`" in run.summary
    assert "PR comment not written: GitHub answered 403 (Resource not accessible by integration)" in run.summary
    assert "Traceback" not in run.log
    assert run.outputs["comment-id"] == ""


def test_not_found_falls_back_and_fail_on_never_passes(make_runner, github):
    github.inject("GET", r"/issues/7/comments$", 404, message="Not Found")
    run = make_runner().run(comment_mode("regressed", **{"fail-on": "never"}), token=TOKEN)
    assert run.returncode == 0
    assert "GitHub answered 404" in run.stdout


def test_rejected_comment_is_retried_short_then_reported_in_one_line(make_runner, github):
    github.inject("POST", r"/issues/7/comments$", 422, message="Validation Failed")
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1
    [c] = github.issue_comments(REPO, PR)
    assert "regressed at layer `conv2`" in c["body"] and "This comment is shortened" in c["body"]

    github.inject("PATCH", r"/issues/comments/\d+$", 422, times=2, message="Validation Failed")  # both tries
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1
    assert "GitHub rejected the comment (422 Validation Failed)" in run.stdout


def test_marker_on_page_3_is_found_and_updated(make_runner, github):
    for i in range(230):
        github.add_comment(REPO, PR, f"review note {i}")
    ours = github.add_comment(REPO, PR, MARKER + "\nold body", user="github-actions[bot]")
    for i in range(5):
        github.add_comment(REPO, PR, f"later note {i}")
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1
    pages = [r.query.get("page", ["1"])[0] for r in github.calls("GET", "/issues/7/comments")]
    assert pages == ["1", "2", "3"]
    assert all(r.query["per_page"] == ["100"] for r in github.calls("GET", "/issues/7/comments"))
    assert not github.calls("POST", "/comments")
    [patch] = github.calls("PATCH")
    assert patch.path.endswith(f"/issues/comments/{ours['id']}")
    assert run.outputs["comment-id"] == str(ours["id"])
    assert len(github.issue_comments(REPO, PR)) == 236


def test_rate_limits_are_retried(make_runner, github):
    github.rate_limit("GET", r"/issues/7/comments$")  # primary: remaining 0, reset already due
    github.rate_limit("POST", r"/issues/7/comments$", retry_after="0.05")  # secondary: Retry-After
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1, run.log
    assert len(github.issue_comments(REPO, PR)) == 1
    assert len(github.calls("GET", "/issues/7/comments")) == 3  # limited, retried, re-read after create
    assert len(github.calls("POST", "/comments")) == 2


def test_rate_limit_longer_than_max_wait_gives_up_without_crashing(make_runner, github):
    github.rate_limit("GET", r"/issues/7/comments$", retry_after="30")
    run = make_runner().run(comment_mode("regressed", **{"max-wait": "1"}), token=TOKEN)
    assert run.returncode == 1
    assert "rate limited by GitHub" in run.stdout
    assert "regressed at layer `conv2`" in run.summary


def test_workflow_run_finds_the_fork_pr_by_head_branch(make_runner, github):
    sha = "5c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d"
    github.pulls[REPO] = [
        {"number": 3, "state": "open", "fork": True, "head": {"sha": "0" * 40, "label": "someone:other"}},
        {"number": 12, "state": "open", "fork": True, "head": {"sha": sha, "label": "contributor:fuse-stem"}},
    ]
    run = make_runner("workflow_run").run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1, run.log
    assert len(github.issue_comments(REPO, 12)) == 1
    assert github.calls("GET", f"/commits/{sha}/pulls")


def test_pr_number_carried_into_workflow_run_is_verified_against_the_head(make_runner, github):
    sha = "5c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d"
    github.pulls[REPO] = [
        {"number": 12, "state": "open", "head": {"sha": sha, "label": "contributor:fuse-stem"}},
        {"number": 31, "state": "open", "head": {"sha": "9" * 40, "label": "octo:other"}},
    ]
    run = make_runner("workflow_run").run(comment_mode("regressed", **{"pr-number": "12"}), token=TOKEN)
    assert run.returncode == 1 and len(github.issue_comments(REPO, 12)) == 1
    forged = make_runner("workflow_run").run(comment_mode("regressed", **{"pr-number": "31"}), token=TOKEN)
    assert forged.returncode == 2  # which pull request, and so which baselines it changes, cannot be told
    assert github.issue_comments(REPO, 31) == []
    assert "pull request #31 has head 999999999999, not the workflow_run's 5c1d2e3f4a5b" in forged.log


def test_a_pr_number_on_a_pull_request_event_must_be_the_events_own(make_runner, github):
    github.open_pull(REPO, github.pulls[REPO][0], number=31)  # another pull request at the same commit
    run = make_runner().run(comment_mode("regressed", **{"pr-number": "31"}), token=TOKEN)
    assert run.returncode == 2 and github.issue_comments(REPO, 31) == []
    assert "pull request #31 was given, and this pull_request event is about #7" in run.log
    assert make_runner().run(comment_mode("regressed", **{"pr-number": "7"}), token=TOKEN).returncode == 1
    assert len(github.issue_comments(REPO, 7)) == 1


def test_bad_inputs_stop_before_anything_runs(make_runner, github):
    run = make_runner().run({"mode": "publish"}, token=TOKEN)
    assert run.returncode == 2
    assert "::error title=parity-gate::input mode is 'publish'" in run.stdout
    assert [s.conclusion for s in run.steps if s.conclusion != "skipped"] == ["failure"]
    run = make_runner().run({"mode": "comment"}, token=TOKEN)
    assert run.returncode == 2 and "mode comment needs the report to post: the report-artifact input" in run.stdout


def test_inputs_reach_scripts_only_through_env():
    text = (ROOT / "action.yml").read_text()
    import yaml

    for step in yaml.safe_load(text)["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), f"step {step.get('id')} interpolates into its script"

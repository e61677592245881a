"""The judging side of a pull request's verdict, as `parity-gate comment` runs it in a workflow: a
real process, the event payload GitHub writes, real HTTP to the fake GitHub.

What the report says is not taken on trust: the baseline files the pull request changes are the
API's list (a report that drops them, or a failed base fetch, cannot hide a baseline change), and
when that list cannot be read the run fails closed, exit 2, in one line saying what to set."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gate.verdict.report_file import NAME_KEYS
from tests.conftest import ROOT, run_cli
from tests.support.fake_github import FakeGitHub

REPORTS = ROOT / "tests" / "data" / "reports"
EVENTS = ROOT / "tests" / "support" / "events"
TOKEN = "ghs_judgingTestToken"
REPO, PR = "octo/models", 7
HEAD = "2a9b4d8e1f0c3b5a7d6e9f8a0b1c2d3e4f5a6b7c"  # tests/support/events/pull_request.json
BASELINE = "baselines/tiny-cnn.msgpack.zst"


def event(name: str = "pull_request") -> dict:
    return json.loads((EVENTS / f"{name}.json").read_text())


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as f:
        f.open_pull(REPO, event()["pull_request"], files=(BASELINE, "models.py"))
        f.push(REPO, "fuse-stem", HEAD, "2026-11-02T09:00:00Z", actor="contributor")  # who pushed: its author
        yield f


def report(tmp_path: Path, name: str = "pass", **changes) -> Path:
    """A fixture report, changed as a fork's run could write it."""
    doc = json.loads((REPORTS / f"{name}.json").read_text())
    doc.update(changes)
    path = tmp_path / f"{name}-as-written.json"
    path.write_text(json.dumps(doc))
    return path


def comment(fake: FakeGitHub, tmp_path: Path, path: Path, *args: str, name: str = "pull_request",
            payload: dict | None = None, token: str = TOKEN):
    (tmp_path / "event.json").write_text(json.dumps(payload or event(name)))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
           "GITHUB_API_URL": fake.url, "GITHUB_GRAPHQL_URL": "", "GITHUB_REPOSITORY": REPO, "GITHUB_RUN_ID": "4242",
           "GITHUB_RUN_ATTEMPT": "1", "GITHUB_TOKEN": token, "PARITY_GATE_GITHUB_TOKEN": "",
           "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    return run_cli("comment", "--report", str(path), *args, cwd=tmp_path, env=env, timeout=120)


def test_a_report_that_drops_its_baseline_changes_still_shows_them(fake, tmp_path):
    proc = comment(fake, tmp_path, report(tmp_path, baseline_changes=[]))
    assert proc.returncode == 0, proc.stderr
    [c] = fake.issue_comments(REPO, PR)
    assert f"**This pull request changes baselines:** `tiny-cnn` (`{BASELINE}`)" in c["body"]


def test_a_dropped_baseline_change_still_needs_its_approval(fake, tmp_path):
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval")
    assert proc.returncode == 1
    assert "BLOCKED | this pull request changes baselines" in proc.stdout
    assert "baselines-approved<<" in (tmp_path / "output").read_text()


def test_an_unreadable_file_list_fails_closed_in_one_line(fake, tmp_path):
    fake.inject("GET", rf"/pulls/{PR}/files$", 403, message="Resource not accessible by integration")
    proc = comment(fake, tmp_path, report(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: the files pull request #{PR} changes cannot be read (403 Resource not accessible "
                           "by integration): give the job a token that can read the pull request (github-token, "
                           "with pull-requests: read)\n")
    assert fake.issue_comments(REPO, PR) == []


def test_no_token_fails_closed(fake, tmp_path):
    proc = comment(fake, tmp_path, report(tmp_path), token="")
    assert proc.returncode == 2
    assert proc.stderr == ("error: the baseline files this pull request changes cannot be listed: no token to read "
                           "the pull request (set the github-token input or GITHUB_TOKEN)\n")


def test_a_pull_request_that_moved_on_is_not_judged_with_another_commits_files(fake, tmp_path):
    fake.push(REPO, "fuse-stem", "f" * 40, "2026-11-02T10:00:00Z")  # pushed after this run's event
    proc = comment(fake, tmp_path, report(tmp_path))
    assert proc.returncode == 2
    assert f"is now at commit ffffffffffff, and this run judged {HEAD[:12]}" in proc.stderr


def test_more_files_than_the_api_lists_fails_closed(fake, tmp_path):
    fake.pulls[REPO][0]["changed_files"] = 3001
    proc = comment(fake, tmp_path, report(tmp_path))
    assert proc.returncode == 2 and "3,001 files, and GitHub lists at most 3,000" in proc.stderr
    fake.pulls[REPO][0]["changed_files"] = 3000
    fake.files[(REPO, PR)] = [{"filename": f"data/{i}.bin"} for i in range(2999)] + [{"filename": BASELINE}]
    assert comment(fake, tmp_path, report(tmp_path)).returncode == 0  # at the limit: every file listed


@pytest.mark.parametrize("count", ["missing", None, "2", 2.0, True, -1])
def test_a_missing_or_malformed_file_count_is_unknown_never_zero(fake, tmp_path, count):
    if count == "missing":
        fake.withheld.add("changed_files")
    else:
        fake.pulls[REPO][0]["changed_files"] = count
    fake.files[(REPO, PR)] = [{"filename": f"data/{i}.bin"} for i in range(3000)]  # capped: the baseline is cut off
    proc = comment(fake, tmp_path, report(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: the files pull request #{PR} changes: GitHub gave no count of them (changed_files), "
                           "so whether its list is complete cannot be told\n")
    assert fake.issue_comments(REPO, PR) == []


def test_a_shorter_list_than_the_pull_request_counts_fails_closed(fake, tmp_path):
    fake.pulls[REPO][0]["changed_files"] = 3
    proc = comment(fake, tmp_path, report(tmp_path))
    assert proc.returncode == 2 and "GitHub listed 2 of 3" in proc.stderr


def test_renames_and_deletions_anywhere_in_the_tree_are_baseline_changes(fake, tmp_path):
    fake.files[(REPO, PR)] = [{"filename": "moved/tiny-cnn.msgpack.zst", "previous_filename": BASELINE,
                               "status": "renamed"}, {"filename": "baselines/old.msgpack.zst", "status": "removed"}]
    assert comment(fake, tmp_path, report(tmp_path)).returncode == 0
    body = fake.issue_comments(REPO, PR)[0]["body"]
    assert "`old` (`baselines/old.msgpack.zst`), `tiny-cnn` (`baselines/tiny-cnn.msgpack.zst`), `tiny-cnn` " \
           "(`moved/tiny-cnn.msgpack.zst`)" in body


def test_a_job_that_only_summarizes_decides_nothing_and_asks_nothing(fake, tmp_path):
    """The job that runs the pull request's code (comment: never, read-only token) keeps its own list."""
    proc = comment(fake, tmp_path, report(tmp_path, baseline_changes=[]), "--when", "never")
    assert proc.returncode == 0 and not fake.calls("GET", "/files")


BASE = "3b0c5e9f2a1d4c6b8e7f0a9b1c2d3e4f5a6b7c8d"  # the event's pull_request.base.sha
GATE_TABLE = ('[project]\nname = "models"\nversion = "{version}"\n\n[tool.parity-gate]\nbaseline-dir = "baselines"\n'
              '{loosened}providers = ["torch-cpu", "CPUExecutionProvider"{provider}]\n{include}\n'
              '[[tool.parity-gate.models]]\nname = "tiny-cnn"\nfactory = "examples.zoo:tiny_cnn"\n')


def pyproject(version: str = "1.0", loosened: str = "", provider: str = ', "CUDAExecutionProvider"',
              include: str = "") -> str:
    return GATE_TABLE.format(version=version, loosened=loosened, provider=provider, include=include)


def changing(fake: FakeGitHub, *files: str) -> None:
    fake.files[(REPO, PR)] = [{"filename": f, "status": "modified"} for f in files]
    fake.pulls[REPO][0]["changed_files"] = len(files)


@pytest.mark.parametrize(("base", "head"), [
    (pyproject(), pyproject(loosened="allow-missing-gpu = true\n")),
    (pyproject(), pyproject(loosened='tolerance = { error-growth = 1e6 }\n')),
    (pyproject(), pyproject(provider="")),  # a provider dropped
    (pyproject(), None),  # deleted
    (None, pyproject()),
])
def test_a_pull_request_that_changes_the_gates_settings_needs_approval(fake, tmp_path, base, head):
    changing(fake, "pyproject.toml", "models.py")
    for sha, text in ((BASE, base), (HEAD, head)):
        if text is not None:
            fake.contents[(REPO, sha, "pyproject.toml")] = text
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval")
    assert proc.returncode == 1, proc.stderr
    assert "BLOCKED | this pull request changes config; " in proc.stdout
    assert "::error title=parity-gate%3A change to its config needs approval::this pull request changes its config " \
           "(pyproject.toml): it fails until" in proc.stdout
    body = fake.issue_comments(REPO, PR)[0]["body"]
    assert "> **This pull request changes what judges it:** config `pyproject.toml` (its \\[tool.parity-gate\\] " \
           "table)." in body
    assert "🔒 **This check fails until the change to its config is approved**" in body
    assert "changes<<" in (tmp_path / "output").read_text()
    fake.roles[(REPO, "maint")] = "maintain"
    fake.reviews[(REPO, PR)] = [{"user": {"login": "maint"}, "state": "APPROVED", "commit_id": HEAD}]
    assert comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval").returncode == 0
    assert "✅ The change to its config is approved (review of commit" in fake.issue_comments(REPO, PR)[0]["body"]


def test_a_pyproject_change_outside_the_gates_table_needs_nothing(fake, tmp_path):
    changing(fake, "pyproject.toml")
    fake.contents[(REPO, BASE, "pyproject.toml")] = pyproject("1.0")
    fake.contents[(REPO, HEAD, "pyproject.toml")] = pyproject("1.1")
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fake.issue_comments(REPO, PR) == []  # a pass that changes nothing that judges it: no comment


def test_a_pyproject_that_cannot_be_compared_counts_as_changed(fake, tmp_path):
    changing(fake, "pyproject.toml")
    fake.contents[(REPO, BASE, "pyproject.toml")] = pyproject()
    fake.contents[(REPO, HEAD, "pyproject.toml")] = "[tool.parity-gate\n"  # not TOML
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval")
    assert proc.returncode == 1
    assert "config `pyproject.toml` (could not be compared)" in fake.issue_comments(REPO, PR)[0]["body"]


@pytest.mark.parametrize(("path", "args", "kind"), [
    ("models/parity-gate.toml", (), "config"),
    ("configs/gate.toml", ("--config", "configs/gate.toml"), "config"),
    ("parity-gate-constraints.txt", (), "constraints"),
    ("sub/parity-gate-constraints.txt", (), "constraints"),
    ("ci/pins.txt", ("--constraints", "./ci/pins.txt"), "constraints"),
    (".github/workflows/parity-gate.yml", (), "workflows"),
    ("sweeps/ops.toml", (), "config"),  # a sweep file the config includes
    (".github/actions/setup/action.yml", (), "workflows"),  # a local action the workflow uses
    (".github/CODEOWNERS", (), "workflows"),  # who must review what
])
def test_every_file_that_decides_the_verdict_needs_approval(fake, tmp_path, path, args, kind):
    changing(fake, path, "README.md")
    for sha in (BASE, HEAD):
        fake.contents[(REPO, sha, "pyproject.toml")] = pyproject(include='include = ["sweeps/*.toml"]\n')
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"BLOCKED | this pull request changes {kind}; " in proc.stdout
    assert f"changes what judges it:** {kind} `{path}`" in fake.issue_comments(REPO, PR)[0]["body"]


def test_files_that_decide_nothing_need_nothing(fake, tmp_path):
    changing(fake, "docs/tolerances.md", "other/ruff.toml", "models.py", "docs/.github/notes.md")
    for sha in (BASE, HEAD):
        fake.contents[(REPO, sha, "pyproject.toml")] = pyproject(include='include = ["sweeps/*.toml"]\n')
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_baselines_and_settings_changed_together_are_listed_by_kind(fake, tmp_path):
    changing(fake, BASELINE, "parity-gate-constraints.txt", ".github/workflows/gate.yml")
    proc = comment(fake, tmp_path, report(tmp_path), "--baseline-changes", "require-approval")
    assert proc.returncode == 1
    assert "BLOCKED | this pull request changes baselines, constraints, workflows; " in proc.stdout
    body = fake.issue_comments(REPO, PR)[0]["body"]
    assert f"> **This pull request changes baselines:** `tiny-cnn` (`{BASELINE}`)." in body
    assert ("> **This pull request changes what judges it:** constraints `parity-gate-constraints.txt`; workflows "
            "`.github/workflows/gate.yml`.") in body
    assert "**This check fails until the change to its baselines, constraints and workflows is approved**" in body


HOSTILE = (" @victim @octo/admins https://evil.example/x www.evil.example a@evil.example mailto:a@evil.example #1 "
           "octo/other#2 GH-3 <img src=x onerror=alert(1)> <a href='https://evil.example'>x</a> "
           "[click](https://evil.example) ![i](https://evil.example/i.png) <details><summary>@victim</summary>")
WORDS = {"schema", "verdict", "status", "role", "error_status", "skip", "kind"}  # vocabulary: checked, not shown as given


def hostile(value, key: str = ""):
    """Every free string of a report with mentions, links and HTML appended, as a fork's run could write it."""
    if isinstance(value, dict):
        return {k: hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [hostile(v, key) for v in value]
    return value + HOSTILE if isinstance(value, str) and key not in WORDS else value


@pytest.mark.parametrize("name", ["pass", "regressed", "export-fail", "real-check-reference-drift"])
def test_mentions_links_and_html_in_every_untrusted_field_are_inert(fake, tmp_path, name):
    from tests.support.github_text import acted_on

    doc = hostile(json.loads((REPORTS / f"{name}.json").read_text()))
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    fake.files[(REPO, PR)] = [{"filename": "baselines/@victim#1 www.evil.example.msgpack.zst"}, {"filename": "x.py"}]
    fake.label(REPO, PR, "parity-gate:approve-baselines", "contributor", "2026-11-02T10:00:00Z")
    proc = comment(fake, tmp_path, path, "--when", "always", "--baseline-changes", "require-approval")
    assert proc.returncode in (1, 3) and "Traceback" not in proc.stderr, proc.stderr
    [c] = fake.issue_comments(REPO, PR)
    for text in (c["body"], (tmp_path / "summary.md").read_text()):
        acted = acted_on(text)
        assert acted.active == []
        assert acted.images == [] and acted.tags <= {
            "p", "h3", "h4", "strong", "em", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "ul", "li",
            "ol", "blockquote", "details", "summary", "b", "sub", "a"}
        assert all(h.startswith(("https://github.example/", "https://github.com/octo/models/")) for h in acted.hrefs)
    assert "@victim" in c["body"]  # still said, in a code span (the file name) that notifies no one


COMMANDS = ("\n::error title=forged::the gate passed\r::notice::all good\n  ::stop-commands::pause\x85::add-mask::x"
            "\u2028::set-output name=verdict::pass\x1c::warning::w ##[set-output name=verdict;]pass")
OURS = ("::error title=parity-gate%3A ", "::notice::parity-gate: ")


def live_commands(output: str) -> list[str]:
    """The lines of ``output`` the runner would act on, besides parity-gate's own annotations: a line is
    cut wherever str.splitlines() cuts (more places than the runner does), a command is ``::`` at the start
    after whitespace, or the legacy ``##[`` anywhere."""
    return [line for line in output.splitlines()
            if (line.strip().startswith("::") and not line.startswith(OURS)) or "##[" in line]


def commanding(value, key: str = ""):
    """Every free string of a report with workflow commands appended after line breaks."""
    if isinstance(value, dict):
        return {k: commanding(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [commanding(v, key) for v in value]
    return value + COMMANDS if isinstance(value, str) and key not in WORDS | NAME_KEYS else value


@pytest.mark.parametrize("name", ["pass", "regressed", "export-fail", "real-check-reference-drift"])
def test_no_report_field_or_api_answer_becomes_a_workflow_command_in_the_log(fake, tmp_path, name):
    path = tmp_path / "commanding.json"
    path.write_text(json.dumps(commanding(json.loads((REPORTS / f"{name}.json").read_text()))))
    fake.files[(REPO, PR)] = [{"filename": f"baselines/x{COMMANDS}.msgpack.zst"}, {"filename": "x.py"}]
    fake.label(REPO, PR, "parity-gate:approve-baselines", f"contributor{COMMANDS}", "2026-11-02T10:00:00Z")
    proc = comment(fake, tmp_path, path, "--baseline-changes", "require-approval")
    assert proc.returncode in (1, 3) and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith(("PASSED | ", "FAILED | "))
    assert "::error title=parity-gate%3A " in proc.stdout  # the annotations still act
    assert live_commands(proc.stdout) == [] and live_commands(proc.stderr) == []
    fake.inject("PATCH", r"/comments/\d+$", 422, message=f"Validation Failed{COMMANDS}", times=2)  # an API answer
    proc = comment(fake, tmp_path, path, "--when", "always")
    assert "PR comment not written" in proc.stdout and live_commands(proc.stdout + proc.stderr) == []


def test_a_format_error_naming_a_hostile_key_stays_one_inert_line(fake, tmp_path):
    doc = json.loads((REPORTS / "regressed.json").read_text())
    doc["models"][0]["versions"] = {f"torch{COMMANDS}": []}
    proc = comment(fake, tmp_path, report(tmp_path, models=doc["models"]))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: report `") and proc.stderr.count("\n") == 1
    assert live_commands(proc.stderr) == []


# Characters that show nothing, or turn the text around them: bidi overrides and isolates, zero-width
# characters, a tag, a soft hyphen, the Mongolian vowel separator, fillers, a selector, controls.
INVISIBLE = ("\u202e\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff\U000e0041"
             "\u00ad\u180e\u3164\u115f\ufe0f\x00\x07\x7f\x9b")


def invisible(value, key: str = ""):
    """Every free string of a report wrapped in characters that cannot be seen."""
    if isinstance(value, dict):
        return {k: invisible(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [invisible(v, key) for v in value]
    return INVISIBLE + value[:1] + INVISIBLE + value[1:] + INVISIBLE \
        if isinstance(value, str) and key not in WORDS | NAME_KEYS else value


@pytest.mark.parametrize("name", ["regressed", "export-fail", "real-check-reference-drift"])
def test_characters_that_cannot_be_seen_never_reach_the_comment_or_the_summary(fake, tmp_path, name):
    doc = json.loads((REPORTS / f"{name}.json").read_text())
    assert comment(fake, tmp_path, report(tmp_path, **doc), "--when", "always").returncode in (1, 3)
    [clean] = fake.issue_comments(REPO, PR)
    clean_summary = (tmp_path / "summary.md").read_text()
    (tmp_path / "summary.md").unlink()
    assert comment(fake, tmp_path, report(tmp_path, **invisible(doc)), "--when", "always").returncode in (1, 3)
    [written] = fake.issue_comments(REPO, PR)
    assert written["body"] == clean["body"]  # every invisible character dropped, nothing else changed
    assert (tmp_path / "summary.md").read_text() == clean_summary
    named = copy.deepcopy(doc)  # a name holding them is refused where the report is read, in one line
    named["models"][0]["name"] = "\u202etiny-cnn"
    proc = comment(fake, tmp_path, report(tmp_path, **named))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "control character '\\u202e'" in proc.stderr


def test_a_malformed_mapping_is_one_line_exit_2(fake, tmp_path):
    doc = json.loads((REPORTS / "regressed.json").read_text())
    doc["models"][0]["mapping"] = {"mapped": 3, "layers": 8}
    proc = comment(fake, tmp_path, report(tmp_path, models=doc["models"]))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: report `{tmp_path / 'pass-as-written.json'}`: `models[0].mapping.folded`: "
                           "expected a count, got nothing (missing)\n")
    assert fake.issue_comments(REPO, PR) == []


def forged_pass(name: str = "regressed") -> dict:
    """A report whose every status says pass, as a fork's run could write it; its rows are left as measured."""
    doc = json.loads((REPORTS / f"{name}.json").read_text())
    doc.update(verdict="pass", first_regression=None, baseline_changes=[])
    for m in doc["models"]:
        m.update(status="pass", first_regression=None)
        for p in m["providers"]:
            p.update(status="pass" if p["status"] != "skipped" else "skipped", first_regression=None)
    return doc


def test_a_report_claiming_pass_whose_rows_regressed_does_not_pass(fake, tmp_path):
    proc = comment(fake, tmp_path, report(tmp_path, **forged_pass()))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-1] == ("FAILED | tiny-cnn: layer conv2 on CPUExecutionProvider failed error-growth "
                                           "(0.0042 > 2.76e-06)")
    body = fake.issue_comments(REPO, PR)[0]["body"]
    assert "> [!CAUTION]\n> **The report claims more than its own rows show; it is judged by the rows:**\n" \
           "> - `tiny-cnn` · `CPUExecutionProvider`: written `pass`, its evidence says `regressed`\n" \
           "> - `tiny-cnn`: written `pass`, its evidence says `regressed`\n" \
           "> - `tiny-mlp`: written `pass`, its evidence says `no-baseline`\n" \
           "> - the verdict: written `pass`, its evidence says `regressed`" in body
    assert "### ❌ parity-gate: `tiny-cnn` regressed at layer `conv2` on `CPUExecutionProvider`" in body


def test_a_passing_row_over_its_threshold_is_a_failure(fake, tmp_path):
    doc = forged_pass("pass")
    row = doc["models"][0]["providers"][1]["layers"][0]
    row["value"] = row["threshold"] * 1.01  # just past the limit, still written as a pass
    assert comment(fake, tmp_path, report(tmp_path, **doc)).returncode == 1
    row["value"] = row["threshold"]  # at the limit: a pass
    assert comment(fake, tmp_path, report(tmp_path, **doc)).returncode == 0


def test_a_missing_baseline_written_as_a_pass_is_not_one(fake, tmp_path):
    doc = forged_pass()
    doc["models"][0] = json.loads((REPORTS / "pass.json").read_text())["models"][0]
    proc = comment(fake, tmp_path, report(tmp_path, **doc))  # tiny-mlp: no baseline, its reference says so
    assert proc.returncode == 1 and "written `pass`, its evidence says `no-baseline`" in \
        fake.issue_comments(REPO, PR)[0]["body"]


def test_a_report_without_models_judged_nothing(fake, tmp_path):
    proc = comment(fake, tmp_path, report(tmp_path, models=[], summary=None))
    assert proc.returncode == 3


def run_event(event_name: str = "pull_request_review") -> dict:
    """The comment workflow's workflow_run event for a run that a review of a fork's pull request started."""
    payload = event("workflow_run")
    payload["workflow_run"]["event"] = event_name
    return payload


def fork_pull(fake: FakeGitHub, number: int = 12, base: str = "main", branch: str = "fuse-stem") -> None:
    sha = event("workflow_run")["workflow_run"]["head_sha"]
    fake.push("contributor/models", branch, sha, "2026-11-02T09:00:00Z", actor="contributor")
    fake.pulls[REPO].append({
        "number": number, "state": "open", "labels": [], "user": {"login": "contributor"}, "changed_files": 1,
        "base": {"ref": base}, "head": {"sha": sha, "ref": branch, "label": f"contributor:{branch}",
                                        "repo": {"full_name": "contributor/models"}}})
    fake.files[(REPO, number)] = [{"filename": BASELINE}]


def test_a_run_started_by_a_review_of_a_forks_pull_request_is_commented_and_approved(fake, tmp_path):
    fork_pull(fake)
    sha = event("workflow_run")["workflow_run"]["head_sha"]
    fake.roles[(REPO, "maint")] = "maintain"
    fake.reviews[(REPO, 12)] = [{"user": {"login": "maint"}, "state": "APPROVED", "commit_id": sha}]
    proc = comment(fake, tmp_path, report(tmp_path, baseline_changes=[]), "--baseline-changes", "require-approval",
                   name="workflow_run", payload=run_event())
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [c] = fake.issue_comments(REPO, 12)
    assert f"✅ The baseline change is approved (review of commit {sha[:12]} by maint)." in c["body"]
    assert fake.calls("GET", f"/commits/{sha}/pulls") and fake.calls("GET", "/pulls")  # found through the API


def test_two_open_pull_requests_from_one_branch_are_not_guessed_between(fake, tmp_path):
    fork_pull(fake, 12)
    fork_pull(fake, 13, base="release")  # the same branch into another base: approved there, perhaps
    proc = comment(fake, tmp_path, report(tmp_path), name="workflow_run", payload=run_event("pull_request"))
    assert proc.returncode == 2
    assert "open pull requests #12, #13 all have head 5c1d2e3f4a5b: which one this run is about cannot be told" \
        in proc.stderr
    assert fake.issue_comments(REPO, 12) == fake.issue_comments(REPO, 13) == []


def test_a_pull_request_number_from_the_artifact_must_match_the_runs_head_repository(fake, tmp_path):
    fork_pull(fake, 12)
    fake.pulls[REPO][-1]["head"]["repo"] = {"full_name": "someone-else/models"}
    proc = comment(fake, tmp_path, report(tmp_path), "--pr", "12", name="workflow_run", payload=run_event())
    assert proc.returncode == 2 and "is not open from contributor/models" in proc.stderr


@pytest.mark.parametrize(("second", "given"), [
    ({"base": "release"}, 13),  # one branch into two bases: the number names the other one
    ({"branch": "second-branch"}, 13),  # another branch at the same commit, which the branch lookup misses
    ({"branch": "second-branch"}, 12),
])
def test_a_given_number_is_refused_when_two_open_pull_requests_share_the_head(fake, tmp_path, second, given):
    fork_pull(fake, 12)
    fork_pull(fake, 13, **second)
    proc = comment(fake, tmp_path, report(tmp_path), "--pr", str(given), name="workflow_run",
                   payload=run_event("pull_request"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "open pull requests #12, #13 all have head 5c1d2e3f4a5b: which one this run is about cannot be told" \
        in proc.stderr
    assert fake.issue_comments(REPO, 12) == fake.issue_comments(REPO, 13) == []


def test_a_given_number_that_is_not_the_events_pull_request_is_refused(fake, tmp_path):
    proc = comment(fake, tmp_path, report(tmp_path), "--pr", "8")
    assert proc.returncode == 2
    assert "pull request #8 was given, and this pull_request event is about #7: not commenting there" in proc.stderr
    assert fake.issue_comments(REPO, PR) == []


def test_the_verdict_is_a_commit_status_on_the_head_commit(fake, tmp_path):
    assert comment(fake, tmp_path, report(tmp_path, name="regressed")).returncode == 1
    [c] = fake.issue_comments(REPO, PR)
    [status] = fake.statuses[(REPO, HEAD)]
    assert status == {"state": "failure", "context": "parity-gate", "target_url": c["html_url"],
                      "description": "regressed: tiny-cnn: layer conv2 on CPUExecutionProvider failed error-growth "
                                     "(0.0042 > 2.76e-06)"}
    proc = comment(fake, tmp_path, report(tmp_path), "--status-context", "parity-gate (cpu)")
    assert proc.returncode == 0 and f"commit status parity-gate (cpu) set to success on {HEAD[:12]}" in proc.stdout
    assert [(s["context"], s["state"]) for s in fake.statuses[(REPO, HEAD)]] == [
        ("parity-gate", "failure"), ("parity-gate (cpu)", "success")]


def test_a_run_that_fails_closed_sets_an_error_status(fake, tmp_path):
    fake.inject("GET", rf"/pulls/{PR}/files$", 403, message="Resource not accessible by integration")
    assert comment(fake, tmp_path, report(tmp_path)).returncode == 2
    [status] = fake.statuses[(REPO, HEAD)]
    assert status["state"] == "error" and status["description"].startswith(
        f"not judged: the files pull request #{PR} changes cannot be read (403")


def test_no_status_from_a_job_that_does_not_comment_or_from_a_run_a_newer_one_superseded(fake, tmp_path):
    assert comment(fake, tmp_path, report(tmp_path, name="regressed"), "--when", "never").returncode == 1
    assert fake.statuses == {}
    payload = event()
    fake.add_comment(REPO, PR, "x", user="github-actions[bot]")  # stands in for the newer run's comment
    fake.comments[(REPO, PR)][0]["body"] = (f"<!-- parity-gate:comment id=default -->\n"
                                            f"<!-- parity-gate:run id=5000 attempt=1 sha={HEAD} -->")
    proc = comment(fake, tmp_path, report(tmp_path), payload=payload)  # run 4242: older
    assert "the comment holds a newer result" in proc.stdout and fake.statuses == {}


def test_a_token_that_cannot_set_statuses_is_one_line_and_the_check_stands(fake, tmp_path):
    fake.inject("POST", r"/statuses/", 403, message="Resource not accessible by integration")
    proc = comment(fake, tmp_path, report(tmp_path, name="regressed"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert ("::warning::parity-gate: commit status parity-gate not set: 403 Resource not accessible by integration: "
            "the token cannot set commit statuses (give the job statuses: write)") in proc.stdout

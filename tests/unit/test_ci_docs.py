"""docs/ci.md: the GitLab CI example parses and holds what GitLab requires of it (stages, every job's
script and stage, needs that exist, rules and environment in GitLab's words, the JUnit report where the
check writes it); its parity-gate commands use options the CLI has; the note posts the Markdown the
check writes, from a job that checks out and runs nothing of the merge request."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import typer
import yaml

from gate.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
# The top-level keys GitLab reads as settings, not jobs, and the keywords a job may hold.
GLOBAL = {"default", "include", "stages", "variables", "workflow", "image", "services", "cache", "before_script",
          "after_script"}
JOB = {"after_script", "allow_failure", "artifacts", "before_script", "cache", "coverage", "dependencies",
       "environment", "extends", "hooks", "id_tokens", "image", "inherit", "interruptible", "needs", "parallel",
       "release", "resource_group", "retry", "rules", "script", "secrets", "services", "stage", "tags", "timeout",
       "trigger", "variables", "when"}
RULE = {"if", "changes", "exists", "when", "allow_failure", "variables", "needs"}
WHEN = {"on_success", "on_failure", "always", "never", "manual", "delayed"}
DEFAULT_STAGES = [".pre", "build", "test", "deploy", ".post"]


def gitlab_ci() -> dict:
    page = (ROOT / "docs" / "ci.md").read_text()
    [block] = re.findall(r"```yaml\n# \.gitlab-ci\.yml\n(.*?)```", page, re.S)
    return yaml.safe_load(block)


def jobs(doc: dict) -> dict[str, dict]:
    return {k: v for k, v in doc.items() if k not in GLOBAL and not k.startswith(".")}


def commands(job: dict) -> list[list[str]]:
    """Each script line's parity-gate invocation, its shell expansions left as words."""
    out = []
    for line in job["script"]:
        words = shlex.split(re.sub(r"\$\{\w+:\+([^}]*)\}", r"\1", line))
        if words and words[0] == "parity-gate":
            out.append(words[1:])
    return out


def test_the_gitlab_example_has_what_gitlab_requires():
    doc = gitlab_ci()
    stages = doc.get("stages", DEFAULT_STAGES)
    assert jobs(doc), "no job"
    for name, job in jobs(doc).items():
        assert set(job) <= JOB, (name, set(job) - JOB)
        assert job["script"] and all(isinstance(line, str) for line in job["script"]), name
        assert job.get("stage", "test") in stages, name
        for need in job.get("needs", []):
            assert (need["job"] if isinstance(need, dict) else need) in jobs(doc), (name, need)
        for rule in job.get("rules", []):
            assert set(rule) <= RULE and rule.get("when", "on_success") in WHEN, (name, rule)
        if "environment" in job:
            assert job["environment"]["action"] in {"start", "prepare", "stop", "verify", "access"}
        if "image" in job and isinstance(job["image"], dict):
            assert "name" in job["image"]


def test_its_commands_use_options_the_cli_has_and_the_ci_reads_the_files_they_write():
    doc = gitlab_ci()
    check = jobs(doc)["parity-gate"]
    [args] = commands(check)
    command = typer.main.get_command(app)
    sub = command.commands[args[0]]
    ctx = click.Context(sub, resilient_parsing=False)
    values, _, _ = sub.make_parser(ctx).parse_args(args[1:])  # an unknown option raises here
    assert check["artifacts"]["reports"]["junit"] == values["junit"]
    assert values["markdown"] in check["artifacts"]["paths"] and check["artifacts"]["when"] == "always"
    note = jobs(doc)["parity-gate-note"]
    assert f"body@{values['markdown']}" in " ".join(note["script"])  # the note is the check's own Markdown
    assert note["variables"]["GIT_STRATEGY"] == "none" and not commands(note)
    assert {"job": "parity-gate", "artifacts": True} in note["needs"]
    assert "PARITY_GATE_NOTE_TOKEN" not in str(check) and note["environment"]["name"] == "parity-gate-note"

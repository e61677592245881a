"""Run one job of a workflow (the ones ``parity-gate init`` writes) the way a runner would, on this machine.

Each job gets its own workspace and runner temp, as a GitHub-hosted job does; what jobs share is the
run's artifacts. Its steps run in order: ``run:`` with bash, the action itself (``uses:`` of the
parity-gate action, run step by step by ``ActionRunner``), upload/download-artifact emulated by
``ActionRunner``, ``actions/checkout`` filling the workspace from a checkout the test prepared (nothing
else: a job without a checkout step sees an empty folder). ``${{ }}`` in ``if:``, ``env:`` and ``with:``
is evaluated with the github, steps, needs and env contexts.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.action_runner import ActionRun, ActionRunner, parse_output_file
from tests.support.expressions import condition, interpolate


@dataclass
class JobRun:
    result: str  # success | failure | skipped
    steps: dict[str, Any] = field(default_factory=dict)
    actions: list[ActionRun] = field(default_factory=list)  # the parity-gate action's runs, in order
    workspace: Path | None = None

    @property
    def log(self) -> str:
        return "".join(run.log for run in self.actions)


def _text(value: Any) -> str:
    """A `with:` value as the runner hands it to an action: YAML booleans as true/false."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def job_if(job: dict[str, Any], event: dict[str, Any], needs: dict[str, str], repository: str,
           event_name: str = "pull_request") -> bool:
    ctx = {"github": {"event": event, "repository": repository, "event_name": event_name},
           "needs": {k: {"result": v} for k, v in needs.items()}}
    failed = any(v == "failure" for v in needs.values())
    if "if" not in job:
        return not failed and not any(v == "skipped" for v in needs.values())
    return condition(job["if"], ctx, "failure" if failed else "success")


def run_job(make: Any, job: dict[str, Any], *, checkout: Path | None, action_prefix: str = "parity-gate/parity-gate@",
            inputs: dict[str, str] | None = None, token: str = "", matrix: dict[str, Any] | None = None) -> JobRun:
    """``make(workspace)`` returns the ``ActionRunner`` of this job (its event, env, artifacts);
    ``checkout``: what actions/checkout puts in the workspace; ``inputs``: added to the action's ``with:``
    (what a runner would have ready, e.g. venv-path); ``matrix``: this leg's values of the job's matrix."""
    runner: ActionRunner = make()
    if any(runner.workspace.iterdir()):
        shutil.rmtree(runner.workspace)
        runner.workspace.mkdir()
    out = JobRun("success", workspace=runner.workspace)
    status = "success"
    for index, step in enumerate(job["steps"]):
        sid = step.get("id") or f"__{index}"
        ctx = {"github": {"event": runner.event, "repository": runner.repository, "token": token,
                          "workspace": str(runner.workspace), "run_attempt": runner.run_attempt},
               "steps": out.steps, "env": {}, "matrix": matrix or {}}
        if not condition(step.get("if"), ctx, status):
            out.steps[sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            continue
        uses = step.get("uses", "")
        with_ = {k: interpolate(_text(v), ctx, status) for k, v in (step.get("with") or {}).items()}
        outputs, ok = {}, True
        if uses.startswith("actions/checkout@"):
            assert checkout is not None, "this job checks out, but the test prepared no checkout"
            shutil.copytree(checkout, runner.workspace, dirs_exist_ok=True, symlinks=True)
        elif uses.startswith(action_prefix):
            run = runner.run({**(inputs or {}), **with_}, token=token)
            out.actions.append(run)
            outputs, ok = run.outputs, run.returncode == 0
        elif uses:
            result = runner._uses(sid, step, with_)
            outputs, ok = result.outputs, result.conclusion == "success"
        else:
            env = {**runner._base_env(), **{k: interpolate(str(v), ctx, status) for k, v in (step.get("env") or {}).items()},
                   "GITHUB_OUTPUT": str(runner.temp / f"job-output-{sid}")}
            Path(env["GITHUB_OUTPUT"]).write_text("")
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                  cwd=runner.workspace, env=env, capture_output=True, text=True, timeout=60)
            outputs, ok = parse_output_file(Path(env["GITHUB_OUTPUT"])), proc.returncode == 0
        out.steps[sid] = {"outputs": outputs, "outcome": "success" if ok else "failure",
                          "conclusion": "success" if ok else "failure"}
        if not ok and status == "success":
            status = out.result = "failure"
    return out

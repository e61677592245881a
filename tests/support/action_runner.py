"""Run a composite action's steps the way a GitHub runner does, on this machine.

It loads action.yml, evaluates ``${{ }}`` in ``env:``/``if:``/``with:``/``working-directory:``
(contexts: inputs, github, env, runner, steps), runs each ``run:`` step with bash
(``--noprofile --norc -eo pipefail``) and a fresh GITHUB_OUTPUT/GITHUB_STEP_SUMMARY file,
stops at the first failing step (later steps run only when their ``if:`` asks for failure()
or always()), and emulates the ``uses:`` steps it knows:

- actions/setup-python: python-path is ``python`` (default: the current interpreter);
- actions/upload-artifact / actions/download-artifact: a folder per artifact under ``artifacts``
  (names must be unique unless ``overwrite``; download takes ``name`` or ``pattern`` + ``merge-multiple``);
- actions/cache/restore and actions/cache/save: a zstd tarball per key and scope under ``cache`` (an
  exact key, else the newest entry matching ``restore-keys``; a key is never overwritten), scoped as
  the cache service scopes them: an entry is saved in the run's ref (a pull request's merge ref), and
  a run restores from its own ref, its pull request's base branch, and the default branch only.

A job's runner temp folder may be given (``temp``): GitHub-hosted runners keep the same one from job
to job, which is what lets a cached virtual environment work where it was restored.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.expressions import condition, interpolate


@dataclass
class StepRun:
    id: str
    name: str
    conclusion: str  # success | failure | skipped
    outputs: dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    returncode: int = 0
    env: dict[str, str] = field(default_factory=dict)
    uses: str = ""
    seconds: float = 0.0  # wall time of the step


@dataclass
class ActionRun:
    returncode: int
    outputs: dict[str, str]
    steps: list[StepRun]
    summary: str

    @property
    def stdout(self) -> str:
        return "".join(s.stdout for s in self.steps)

    @property
    def log(self) -> str:
        return "".join(s.stdout + s.stderr for s in self.steps)

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)


def parse_output_file(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's two forms: ``name=value`` and ``name<<DELIM`` ... ``DELIM``."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


class ActionRunner:
    """One job's view: a workspace, a runner temp, an event, artifacts shared across runs (jobs)."""

    def __init__(
        self,
        action_dir: Path,
        workspace: Path,
        *,
        api_url: str,
        event_name: str = "pull_request",
        event: dict[str, Any] | None = None,
        repository: str = "octo/models",
        run_id: str = "4242",
        run_attempt: str = "1",
        job: str = "gate",
        runner_name: str = "runner-1",
        env: dict[str, str] | None = None,
        artifacts: Path | None = None,
        cache: Path | None = None,
        temp: Path | None = None,
        python: str = sys.executable,
        inputs: dict[str, str] | None = None,
    ):
        self.action_dir = action_dir
        self.workspace = workspace
        self.api_url = api_url
        self.repository = repository
        self.run_id = run_id
        self.run_attempt = run_attempt
        self.job = job
        self.runner_name = runner_name
        self.job_env = dict(env or {})
        self.artifacts = artifacts or workspace / "_artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.cache = cache or workspace.parent / "_cache"
        self.step_timeout = 300.0
        self.python = python
        self.inputs = dict(inputs or {})  # given to every run under the run's own (a workflow's fixed `with:`)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)  # a new job starts with an empty runner temp
            temp.mkdir(parents=True)
        self.temp = temp or Path(tempfile.mkdtemp(prefix="runner-temp-", dir=workspace.parent))
        self.event_name = event_name
        self.event_path = self.temp / "event.json"
        self.event = event or {}
        self.event_path.write_text(json.dumps(self.event), encoding="utf-8")
        self.action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
        assert self.action["runs"]["using"] == "composite"

    # -- contexts ----------------------------------------------------------------------------
    def _base_env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")}
        return {
            **keep,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_API_URL": self.api_url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_REPOSITORY": self.repository,
            "GITHUB_RUN_ID": self.run_id,
            "GITHUB_RUN_ATTEMPT": self.run_attempt,
            "GITHUB_SHA": "9" * 40,
            "GITHUB_JOB": self.job,
            "GITHUB_EVENT_NAME": self.event_name,
            "GITHUB_EVENT_PATH": str(self.event_path),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_ACTION_PATH": str(self.action_dir),
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "RUNNER_NAME": self.runner_name,
            "RUNNER_ENVIRONMENT": "github-hosted",
            **self.job_env,
        }

    def _contexts(self, inputs: dict[str, str], steps: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
        return {
            "inputs": inputs,
            "steps": steps,
            "env": env,
            "runner": {"temp": str(self.temp), "os": "Linux", "arch": "X64", "name": self.runner_name},
            "github": {
                "token": self.job_env.get("GITHUB_TOKEN", ""),
                "api_url": self.api_url,
                "server_url": "https://github.example",
                "repository": self.repository,
                "run_id": self.run_id,
                "run_attempt": self.run_attempt,
                "sha": "9" * 40,
                "job": self.job,
                "event_name": self.event_name,
                "event": self.event,
                "workspace": str(self.workspace),
                "action_path": str(self.action_dir),
            },
        }

    # -- run -----------------------------------------------------------------------------------
    def run(self, inputs: dict[str, str] | None = None, token: str = "") -> ActionRun:
        given = {k: str(v) for k, v in {**self.inputs, **(inputs or {})}.items()}
        unknown = set(given) - set(self.action.get("inputs", {}))
        assert not unknown, f"inputs not declared in action.yml: {unknown}"
        env = self._base_env()
        ctx = self._contexts({}, {}, {k: v for k, v in self.job_env.items()})
        ctx["github"]["token"] = token
        resolved = {}
        for name, spec in self.action.get("inputs", {}).items():
            resolved[name] = given.get(name, interpolate(str(spec.get("default", "")), ctx))
        steps_ctx: dict[str, Any] = {}
        runs: list[StepRun] = []
        status, summary, failed_rc = "success", [], 0
        for index, step in enumerate(self.action["runs"]["steps"]):
            sid = step.get("id") or f"__{index}"
            ctx = self._contexts(resolved, steps_ctx, self.job_env)
            if not condition(step.get("if"), ctx, status):
                runs.append(StepRun(sid, step.get("name", sid), "skipped"))
                steps_ctx[sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
                continue
            step_env = {k: interpolate(str(v), ctx, status) for k, v in (step.get("env") or {}).items()}
            started = time.monotonic()
            if "uses" in step:
                with_ = {k: interpolate(str(v), ctx, status) for k, v in (step.get("with") or {}).items()}
                result = self._uses(sid, step, with_)
            else:
                workdir = interpolate(str(step.get("working-directory", ".")), ctx, status)
                result = self._run(sid, step, {**env, **step_env}, workdir, summary)
            result.env, result.seconds = step_env, time.monotonic() - started
            runs.append(result)
            steps_ctx[sid] = {"outputs": result.outputs, "outcome": result.conclusion, "conclusion": result.conclusion}
            if result.conclusion == "failure" and status == "success":
                status, failed_rc = "failure", result.returncode or 1
        ctx = self._contexts(resolved, steps_ctx, self.job_env)
        outputs = {k: interpolate(str(v.get("value", "")), ctx, status) for k, v in self.action.get("outputs", {}).items()}
        return ActionRun(failed_rc if status == "failure" else 0, outputs, runs, "".join(summary))

    def _run(self, sid: str, step: dict[str, Any], env: dict[str, str], workdir: str, summary: list[str]) -> StepRun:
        assert step.get("shell") == "bash", f"step {sid}: composite run steps must set shell: bash"
        script = self.temp / f"step-{sid}.sh"
        script.write_text(step["run"], encoding="utf-8")
        out_file, sum_file = self.temp / f"output-{sid}", self.temp / f"summary-{sid}"
        out_file.write_text(""), sum_file.write_text("")
        env = {**env, "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(sum_file)}
        cwd = (self.workspace / workdir).resolve()
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=self.step_timeout,
        )
        summary.append(sum_file.read_text(encoding="utf-8"))
        return StepRun(
            sid, step.get("name", sid), "success" if proc.returncode == 0 else "failure",
            parse_output_file(out_file), proc.stdout, proc.stderr, proc.returncode,
        )

    @property
    def ref(self) -> str:
        """``github.ref``: a pull request's merge ref (pull_request_target runs in its base branch), else
        the pushed ref, else the default branch."""
        pr = self.event.get("pull_request")
        if pr and self.event_name in ("pull_request", "pull_request_review"):
            return f"refs/pull/{pr.get('number', self.event.get('number'))}/merge"
        if pr and self.event_name == "pull_request_target":
            return f"refs/heads/{pr.get('base', {}).get('ref') or self.default_branch}"
        return self.event.get("ref") or f"refs/heads/{self.default_branch}"

    @property
    def default_branch(self) -> str:
        return self.event.get("repository", {}).get("default_branch") or "main"

    def _scopes(self) -> list[str]:
        """The refs whose cache entries this run can restore, in the order the service looks."""
        scopes = [self.ref]
        base = (self.event.get("pull_request") or {}).get("base", {}).get("ref")
        scopes += [f"refs/heads/{b}" for b in (base, self.default_branch) if b]
        return list(dict.fromkeys(scopes))

    def _cache(self, action: str, with_: dict[str, str]) -> dict[str, str]:
        """Cache entries: a tarball of the path per key and scope (as actions/cache stores them, zstd), the
        key and the scope beside it. Restore takes the exact key from the first scope that has it, else
        the newest entry of a visible scope whose key starts with one of ``restore-keys`` (cache-hit
        false, as the service answers a partial match). Save writes into this run's scope."""
        key, path = with_["key"], Path(with_["path"])
        if action == "actions/cache/restore":
            exact = next((e for e in (self._entry(key, scope) for scope in self._scopes()) if e.exists()), None)
            matched, hit = (exact, "true") if exact is not None else (self._prefixed(with_.get("restore-keys", "")),
                                                                       "false")
            if matched is None:
                return {"cache-hit": "false", "cache-primary-key": key}
            path.mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "--zstd", "-xf", str(matched), "-C", str(path)], check=True)
            return {"cache-hit": hit, "cache-primary-key": key,
                    "cache-matched-key": matched.with_suffix("").with_suffix(".key").read_text()}
        entry = self._entry(key, self.ref)
        if not entry.exists() and path.is_dir():  # a key is written once per scope (the service refuses a second)
            self.cache.mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "--zstd", "-cf", str(entry), "-C", str(path), "."], check=True)
            entry.with_suffix("").with_suffix(".key").write_text(key)
            entry.with_suffix("").with_suffix(".scope").write_text(self.ref)
        return {}

    def _entry(self, key: str, scope: str) -> Path:
        digest = hashlib.sha256((scope + "\0" + key).encode()).hexdigest()
        return self.cache / f"{digest[:32]}.tar.zst"

    def _prefixed(self, restore_keys: str) -> Path | None:
        """The newest entry of a visible scope whose key starts with the first prefix that matches any."""
        visible = set(self._scopes())
        entries = [e for e in sorted(self.cache.glob("*.tar.zst"), key=lambda p: p.stat().st_mtime, reverse=True)
                   if e.with_suffix("").with_suffix(".scope").read_text() in visible]
        for prefix in (line.strip() for line in restore_keys.splitlines() if line.strip()):
            for e in entries:
                if e.with_suffix("").with_suffix(".key").read_text().startswith(prefix):
                    return e
        return None

    def _uses(self, sid: str, step: dict[str, Any], with_: dict[str, str]) -> StepRun:
        action = step["uses"].split("@")[0]
        run = StepRun(sid, step.get("name", sid), "success", uses=step["uses"])
        if action == "actions/setup-python":
            run.outputs = {"python-path": self.python, "python-version": sys.version.split()[0]}
        elif action in ("actions/cache/restore", "actions/cache/save"):
            run.outputs = self._cache(action, with_)
        elif action == "actions/upload-artifact":
            name = with_["name"]
            dest = self.artifacts / name
            if dest.exists() and with_.get("overwrite", "false").lower() != "true":
                return StepRun(sid, run.name, "failure", stderr=f"artifact {name} already exists", returncode=1, uses=step["uses"])
            shutil.rmtree(dest, ignore_errors=True)
            # Like upload-artifact: a folder keeps its tree, loose files are stored by name.
            # Relative paths are the workspace's, as on a runner.
            paths = [p for line in with_["path"].splitlines() if line.strip()
                     for p in glob.glob(str(self.workspace / line.strip()), recursive=True)]
            if not paths and with_.get("if-no-files-found", "warn") == "error":
                return StepRun(sid, run.name, "failure", stderr=f"no files for artifact {name}", returncode=1, uses=step["uses"])
            dest.mkdir(parents=True)
            for p in paths:
                if os.path.isdir(p):
                    shutil.copytree(p, dest, dirs_exist_ok=True)
                elif os.path.isfile(p):
                    shutil.copy2(p, dest / os.path.basename(p))
            run.outputs = {"artifact-id": str(abs(hash(name)) % 10**6),
                           "artifact-url": f"https://github.example/{self.repository}/actions/runs/{self.run_id}/artifacts/{abs(hash(name)) % 10**6}"}
        elif action == "actions/download-artifact":
            target = self.workspace / with_.get("path", "")  # an absolute path stays as it is
            names = sorted(p.name for p in self.artifacts.iterdir())
            chosen = [n for n in names if (with_.get("name") and n == with_["name"]) or
                      (not with_.get("name") and fnmatch.fnmatch(n, with_.get("pattern") or "*"))]
            if with_.get("name") and not chosen:
                return StepRun(sid, run.name, "failure", stderr=f"artifact {with_['name']} not found", returncode=1,
                               uses=step["uses"])
            for n in chosen:
                dest = target if (str(with_.get("merge-multiple")).lower() == "true" or with_.get("name")) else target / n
                shutil.copytree(self.artifacts / n, dest, dirs_exist_ok=True)
            run.outputs = {"download-path": str(target)}
        else:
            raise NotImplementedError(f"step {sid}: no emulation for uses: {step['uses']}")
        return run

"""A sharded check against one job: architectures of scripts/zoo gated in one job and over N legs, each job
run through the local action runner (tests/support/action_runner.py) with the real CLI, against the fake
GitHub (tests/support/fake_github.py).

    PYTHONPATH=. python scripts/bench_shards.py [--models resnet18,bert,...] [--shards 4] [--json shards.json]
        [--keep DIR] [--timeout 3600]

One project holds every chosen row (a config naming them, the factory module the zoo's rows share);
`update-baseline` records them once (and with them the seconds each model took, which the shards are
balanced by), committed as the pull request's base. Then, as `parity-gate init` writes the workflows:

- one job: the action's mode check over every model, then the verdict job (mode comment);
- N legs: mode check with `shard: K`, `shards: N`, one after another on this machine, each timed; then the
  verdict job with `shards: N`, which merges the legs' report artifacts into one comment and one status.

Printed (and written with --json): both verdicts, whether the merged report equals the one job's (models,
rows, first regression; timings aside), the one job's wall time, the critical path of the sharded run (the
longest leg, then the verdict job: what a pull request waits for when each leg has its own runner) and the
sum of the legs' times (what it costs), with each leg's recorded and measured seconds. Each job runs with a
ready environment (`venv-path`) and no export cache: a runner's own start, checkout and environment
restore are not in the figures (docs/performance.md#the-actions-install has those).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from measure import host, own_cache  # noqa: E402

from tests.support.action_runner import ActionRunner  # noqa: E402
from tests.support.fake_github import FakeGitHub  # noqa: E402
from tests.support.prepared_venv import make_prepared_venv  # noqa: E402

# 24 rows that gate end to end (docs/models.md), torchvision and transformers alike, none over a minute.
DEFAULT = ("resnet18,mobilenet-v2,mobilenet-v3-small,efficientnet-b0,regnet-y-400mf,vit,swin-t,maxvit,"
           "squeezenet1-1,shufflenet-v2,mnasnet0-5,mvit,bert,roberta,distilbert,electra,gpt2,llama,mistral,qwen2,"
           "t5,bart,hf-vit,whisper")
REPO, TOKEN = "octo/models", "ghs_benchShardsToken0123456789"
EVENT = ROOT / "tests" / "support" / "events" / "pull_request.json"
TIMINGS = {"latency_ms", "latency_p90_ms", "capture_peak_mb"}


def ident(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args], cwd=folder,
                          check=True, capture_output=True, text=True).stdout.strip()


def project(folder: Path, names: list[str]) -> None:
    """A repository whose config gates every row of ``names``."""
    folder.mkdir(parents=True)
    config = ['baseline-dir = "baselines"', 'providers = ["torch-cpu", "CPUExecutionProvider"]', ""]
    module = ['"""The zoo rows this project gates."""', "", "from zoo.factories import build_for, inputs_for", ""]
    for name in names:
        config += ["[[models]]", f'name = "{name}"', f'factory = "zoo_models:build_{ident(name)}"',
                   f'inputs = "zoo_models:inputs_{ident(name)}"', ""]
        module += [f'build_{ident(name)} = build_for("{name}")', f'inputs_{ident(name)} = inputs_for("{name}")']
    (folder / "parity-gate.toml").write_text("\n".join(config))
    (folder / "zoo_models.py").write_text("\n".join(module) + "\n")


def scrubbed(value):
    if isinstance(value, dict):
        return {k: scrubbed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    return value


class Bench:
    def __init__(self, root: Path, github: FakeGitHub, event: dict, timeout: float) -> None:
        self.root, self.github, self.event, self.timeout = root, github, event, timeout
        self.venv = make_prepared_venv(root / "venv", module="gate.cli")
        self.scripts = str(ROOT / "scripts")
        self.loads: dict[str, tuple[float, float]] = {}  # a shared host's other work shows here

    def job(self, name: str, workspace: Path, artifacts: Path, inputs: dict[str, str]) -> tuple[float, object]:
        """One job of the workflow: its wall time and the action's run."""
        runner = ActionRunner(ROOT, workspace, api_url=self.github.url, event=self.event, repository=REPO,
                              job=name.split("-")[0], env={"PYTHONPATH": self.scripts}, artifacts=artifacts,
                              temp=self.root / f"temp-{name}", inputs={"venv-path": str(self.venv)})
        runner.step_timeout = self.timeout
        started, load = time.perf_counter(), os.getloadavg()[0]
        run = runner.run(inputs, token=TOKEN)
        wall = time.perf_counter() - started
        self.loads[name] = (round(load, 2), round(os.getloadavg()[0], 2))
        print(f"  {name:12} {wall:7.1f} s  exit {run.returncode}  (load average {load:.2f} at the start, "
              f"{self.loads[name][1]:.2f} at the end)", flush=True)
        return wall, run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT, help="comma-separated zoo rows (default: 24 of them)")
    ap.add_argument("--shards", type=int, default=4, help="legs of the sharded run (default 4)")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    ap.add_argument("--keep", type=Path, help="keep the project and the runners' folders under DIR")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per step of a job")
    args = ap.parse_args(argv)
    own_cache()  # never the user's store
    from zoo import specs

    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in specs()]
    if unknown:
        raise SystemExit(f"--models: no zoo row {', '.join(unknown)} (scripts/bench_zoo.py --list shows them)")
    command = "PYTHONPATH=. python scripts/bench_shards.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(host("torch", "onnxruntime", "transformers"), flush=True)
    print(f"{len(names)} models, {args.shards} shards: {', '.join(names)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        root = args.keep or Path(tmp)
        out = run(root, names, args, command)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0 if out["same_report"] else 1


def run(root: Path, names: list[str], args: argparse.Namespace, command: str) -> dict:
    repo = root / "repo"
    project(repo, names)
    git(repo, "init", "-q")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "scripts")])}
    started = time.perf_counter()
    recorded = subprocess.run([sys.executable, "-m", "gate.cli", "update-baseline"], cwd=repo, capture_output=True,
                              text=True, env=env)
    update_s = time.perf_counter() - started
    print(f"  update-baseline {update_s:7.1f} s  exit {recorded.returncode}", flush=True)
    if recorded.returncode != 0:
        raise SystemExit(recorded.stdout[-2000:] + recorded.stderr[-2000:])
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the models and their baselines")
    event = json.loads(EVENT.read_text())
    event["pull_request"]["base"]["sha"] = git(repo, "rev-parse", "HEAD")
    judge = root / "judge"  # the verdict jobs check nothing out
    judge.mkdir()
    with FakeGitHub(token=TOKEN) as github:
        github.open_pull(REPO, event["pull_request"])
        bench = Bench(root, github, event, args.timeout)
        common = {"comment": "never", "report-artifact": "parity-gate-report", "export-cache": "false"}
        print("one job:", flush=True)
        one_s, one = bench.job("check-all", repo, root / "artifacts-one", common)
        one_verdict_s, one_verdict = bench.job("verdict-one", judge, root / "artifacts-one",
                                               {"mode": "comment", "report-artifact": "parity-gate-report"})
        print(f"{args.shards} legs:", flush=True)
        legs = [bench.job(f"check-{k}", repo, root / "artifacts-legs",
                          {**common, "shard": str(k), "shards": str(args.shards)}) for k in range(1, args.shards + 1)]
        merged_s, merged = bench.job("verdict-merge", judge, root / "artifacts-legs",
                                     {"mode": "comment", "report-artifact": "parity-gate-report",
                                      "shards": str(args.shards)})
        comments = len(github.issue_comments(REPO, event["pull_request"]["number"]))
        statuses = [s["state"] for s in github.statuses.get((REPO, event["pull_request"]["head"]["sha"]), [])]
    one_report = json.loads(Path(one.outputs["report-json"]).read_text())
    merged_report = json.loads(Path(merged.outputs["report-json"]).read_text())
    same = scrubbed(one_report) == scrubbed(merged_report)
    leg_s = [wall for wall, _ in legs]
    planned = _planned(repo, args.shards)
    out = {
        "schema": "parity-gate/bench-shards", "version": 1, "command": command, "machine": host("torch", "onnxruntime", "transformers"),
        "date": datetime.date.today().isoformat(), "models": names, "shards": args.shards,
        "update_baseline_s": round(update_s, 1),
        "one_job": {"verdict": one.outputs.get("verdict"), "check_s": round(one_s, 1),
                    "verdict_job_s": round(one_verdict_s, 1), "path_s": round(one_s + one_verdict_s, 1),
                    "verdict_exit": one_verdict.returncode},
        "sharded": {"verdict": merged.outputs.get("verdict"), "legs_s": [round(s, 1) for s in leg_s],
                    "recorded_s": [round(s, 1) for s in planned], "verdict_job_s": round(merged_s, 1),
                    "critical_path_s": round(max(leg_s) + merged_s, 1), "legs_sum_s": round(sum(leg_s), 1),
                    "verdict_exit": merged.returncode},
        "same_report": same, "comments": comments, "statuses": statuses, "load_averages": bench.loads,
    }
    s = out["sharded"]
    print(f"\none job: verdict {out['one_job']['verdict']}, {out['one_job']['path_s']} s (check "
          f"{out['one_job']['check_s']} s + verdict {out['one_job']['verdict_job_s']} s)")
    print(f"{args.shards} shards: merged verdict {s['verdict']}, critical path {s['critical_path_s']} s (longest leg "
          f"{max(leg_s):.1f} s + verdict {s['verdict_job_s']} s), legs together {s['legs_sum_s']} s; legs "
          + ", ".join(f"{m:.0f} s (recorded {r:.0f} s)" for m, r in zip(leg_s, planned, strict=True)))
    print(f"merged report {'equals' if same else 'DIFFERS FROM'} the one job's (timings aside); {comments} comment(s), "
          f"commit statuses {statuses} (the one job's verdict job, then the merge's)")
    return out


def _planned(repo: Path, shards: int) -> list[float]:
    """The seconds each shard's models recorded (what the cut balanced)."""
    from gate.commands.shards import plan
    from gate.config import load_config
    from gate.config.shards import Shard

    cfg = load_config(repo / "parity-gate.toml")
    return list(plan(cfg, cfg.models, Shard(1, shards)).loads)


if __name__ == "__main__":
    sys.exit(main())

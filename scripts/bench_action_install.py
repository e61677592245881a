"""Time the action's install and run, step by step, with the local runner the e2e tests use
(tests/support/action_runner.py: actions/setup-python, actions/cache and artifacts emulated on local
folders; pip and the index as configured on this machine, its cache off, as on a fresh runner).

    PYTHONPATH=. python scripts/bench_action_install.py --mode comment --ref main   # before: main's action
    PYTHONPATH=. python scripts/bench_action_install.py --mode comment              # after: this checkout, cold then warm
    PYTHONPATH=. python scripts/bench_action_install.py --mode check --torch-build cpu \\
        --constraints torch==2.13.0 --torch-index-url file:///tmp/cpu-index/simple

Each run is a new job (an empty runner temp, as on GitHub) on one cache: the first run of this
checkout is cold, the next ones warm. Prints one line per run: the install steps and the whole job.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import own_cache  # noqa: E402

from tests.support.action_runner import ActionRunner  # noqa: E402
from tests.support.fake_github import FakeGitHub  # noqa: E402

TOKEN = "ghs_benchToken"
INSTALL_STEPS = ("Set up Python (isolated)", "Plan the environment", "Restore parity-gate's environment",
                 "Install parity-gate", "Save parity-gate's environment")
EVENT = {"pull_request": {"number": 7, "head": {"sha": "a" * 40}, "base": {"sha": "b" * 40}},
         "repository": {"full_name": "octo/models"}}


def action_tree(ref: str | None, dest: Path) -> Path:
    """The action as a runner downloads it: a revision's files (git archive) or this checkout's."""
    dest.mkdir(parents=True)
    if ref:
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return dest
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.splitlines()
    for name in files:
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def workspace(tmp: Path, mode: str) -> Path:
    """The job's checkout: the examples, their config and baselines (check runs them)."""
    ws = tmp / "work"
    if not ws.exists():
        shutil.copytree(ROOT / "examples", ws / "examples")
        shutil.copytree(ROOT / "baselines", ws / "baselines")
        text = (ROOT / "pyproject.toml").read_text()
        (ws / "pyproject.toml").write_text(text[text.index("[tool.parity-gate]"):])
    return ws


def inputs(args: argparse.Namespace, action: Path, tmp: Path) -> dict[str, str]:
    out = {"mode": args.mode, "comment": "always"}
    if args.mode == "comment":
        out["report-json"] = str(ROOT / "tests" / "data" / "reports" / "regressed.json")
    declared = (action / "action.yml").read_text()
    if args.constraints and "constraints:" in declared:
        pins = tmp / "constraints.txt"
        pins.write_text("\n".join(args.constraints) + "\n")
        out["constraints"] = str(pins)
    for name in ("torch-build", "torch-index-url"):
        value = getattr(args, name.replace("-", "_"))
        if value and f"  {name}:" in declared:
            out[name] = value
    return out


def one_run(action: Path, tmp: Path, args: argparse.Namespace, github: FakeGitHub) -> dict:
    env = {"PIP_NO_CACHE_DIR": "1", **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}}
    runner = ActionRunner(action, workspace(tmp, args.mode), api_url=github.url, event=EVENT, env=env,
                          temp=tmp / "runner-temp", cache=tmp / "cache", artifacts=tmp / "artifacts",
                          python=getattr(sys, "_base_executable", sys.executable))
    runner.step_timeout = 3600.0
    start = time.monotonic()
    run = runner.run(inputs(args, action, tmp), token=TOKEN)
    total = time.monotonic() - start
    install = sum(s.seconds for s in run.steps if s.name in INSTALL_STEPS)
    venv = next((tmp / "runner-temp" / d for d in ("parity-gate-env", "parity-gate-venv")
                 if (tmp / "runner-temp" / d).exists()), None)
    size = sum(p.stat().st_size for p in venv.rglob("*") if p.is_file()) if venv else 0
    failed = [s.name for s in run.steps if s.conclusion == "failure" and s.name in INSTALL_STEPS]
    return {"install_s": round(install, 1), "job_s": round(total, 1), "cache_hit": run.outputs.get("cache-hit", ""),
            "venv_mb": round(size / 2**20), "failed_steps": failed,
            "log_tail": run.log[-1500:] if failed else ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="comment", choices=("comment", "check", "collect", "report"))
    ap.add_argument("--ref", help="a git revision of the action to time instead of this checkout (e.g. main)")
    ap.add_argument("--runs", type=int, default=2, help="jobs in a row on one cache (first cold, then warm)")
    ap.add_argument("--constraints", nargs="*", default=[], help="pins for the constraints input, e.g. torch==2.13.0")
    ap.add_argument("--torch-build", default="", help="the torch-build input")
    ap.add_argument("--torch-index-url", default="", help="the torch-index-url input")
    args = ap.parse_args(argv)
    own_cache()  # never the user's store
    with tempfile.TemporaryDirectory(prefix="parity-gate-bench-") as tmp_name, FakeGitHub(token=TOKEN) as github:
        tmp = Path(tmp_name)
        action = action_tree(args.ref, tmp / "action")
        for i in range(args.runs):
            result = one_run(action, tmp, args, github)
            print(json.dumps({"action": args.ref or "checkout", "mode": args.mode, "run": i + 1, **result}), flush=True)
            if result["failed_steps"]:
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

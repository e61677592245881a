"""Benchmark: the garbage collector's rule around a command (``gate.core.collector``) against the
interpreter's defaults, on the first check after a code change.

    PYTHONPATH=. python scripts/bench_gc.py [--models resnet18 gpt2x512] [--repeat 3]

Per model (bench_reuse's projects and models), `update-baseline` first (not timed), then per repeat a
check with the rule (the default) and one without it (``collector.command`` and ``collector.frozen``
doing nothing), alternating which goes first, each in a fresh process from a copy of the store that
baseline left (``BENCH_CODE_CHANGE``: exported afresh, the reference runs). The process counts the
collector's seconds with ``gc.callbacks`` in three phases: loading (until the stages start), the stages
and after (until ``main`` returns), and the interpreter's exit. Wall time and the peak of the process
tree are measured from outside (``measure.measured``): from the start to the process's end, its exit
included.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_reuse import ROOT, project  # noqa: E402 - the projects and models the reuse benchmark times
from measure import host, measured, own_cache, pairs  # noqa: E402

COUNTED = """
import contextlib, gc, json, os, sys, time
root, how, out = sys.argv[1:4]
sys.path.insert(0, root)
from gate.core import collector
seen = {"loading": 0.0, "stages and after": 0.0, "exit": 0.0}
phase, began = ["loading"], [0.0]
def count(step, info):
    if step == "start":
        began[0] = time.perf_counter()
    else:
        seen[phase[0]] += time.perf_counter() - began[0]
gc.callbacks.append(count)
frozen = collector.frozen
@contextlib.contextmanager
def staged():
    phase[0] = "stages and after"
    with (frozen() if how == "rule" else contextlib.nullcontext()):
        yield
collector.frozen = staged
if how == "none":
    collector.command = contextlib.nullcontext
def said():  # registered first, so run last of the exit handlers: what follows is the interpreter's
    phase[0] = "exit"
    os.write(2, ("GC " + json.dumps(seen) + "\\n").encode())
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    def at_exit(step, info):  # the exit's collections, written where the parent reads them
        if step == "stop":
            os.pwrite(fd, json.dumps(seen).encode().ljust(200), 0)
    gc.callbacks.append(at_exit)
import atexit
atexit.register(said)
from gate.cli.app import main
sys.argv = ["parity-gate", "check"]
main()
"""


def span(values: list[float], digits: int = 2) -> str:
    """The median and the range."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def one(folder: Path, store: Path, how: str, out: Path) -> tuple[dict, float, float]:
    env = {"PARITY_GATE_CACHE_DIR": str(store), "BENCH_CODE_CHANGE": "1", "PYTHONPATH": str(ROOT)}
    run = measured([sys.executable, "-c", COUNTED, str(ROOT), how, str(out)], folder, env)
    line = next((x for x in run.proc.stderr.splitlines() if x.startswith("GC ")), None)
    if line is None:
        raise SystemExit(f"the check failed ({run.proc.returncode}):\n{run.proc.stderr[-3000:]}")
    seen = json.loads(line[3:])
    if out.exists() and out.read_text().strip():
        seen = json.loads(out.read_text())
    return seen, run.wall_s, run.peak_mib


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["resnet18", "gpt2x512"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    own_cache()  # never the user's store
    print(host("torch", "transformers"), flush=True)
    print("| model | collector | GC s loading | GC s stages and after | GC s exit | wall s | peak MiB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
            folder, cache = project(Path(tmp) / "p", model), Path(tmp) / "cache"
            subprocess.run([sys.executable, "-m", "gate.cli", "update-baseline"], cwd=folder, check=True,
                           capture_output=True, env={**os.environ, "PARITY_GATE_CACHE_DIR": str(cache),
                                                     "PYTHONPATH": str(ROOT)})
            rows: dict[str, list[tuple[dict, float, float]]] = {"rule": [], "none": []}
            for i, order in enumerate(pairs(args.repeat, ("rule", "none"))):
                for how in order:
                    store = Path(tmp) / f"{how}-{i}"
                    shutil.copytree(cache, store)
                    rows[how].append(one(folder, store, how, Path(tmp) / f"{how}-{i}.json"))
                    shutil.rmtree(store)
            for how, runs in rows.items():
                cells = [span([r[0][k] for r in runs]) for k in ("loading", "stages and after", "exit")]
                print(f"| {model} | {'the rule' if how == 'rule' else 'defaults'} | {' | '.join(cells)} "
                      f"| {span([r[1] for r in runs], 1)} | {span([r[2] for r in runs], 0)} |", flush=True)


if __name__ == "__main__":
    main()

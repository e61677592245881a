"""Benchmark: the garbage collector's time in the gate's process, with the stages' heap frozen
(``gate.commands.prepare._frozen``, the default) and without, on the first check after a code change.

    PYTHONPATH=. python scripts/bench_gc.py [--models resnet18 gpt2x512] [--repeat 2]

Per model (bench_reuse's projects and models), `update-baseline` first (not timed), then per repeat a
check with the heap frozen and one without, alternating which goes first, each from a copy of the
store that baseline left (``BENCH_CODE_CHANGE``: exported afresh, the reference runs). Each check runs
in a fresh process that counts the collector's time with ``gc.callbacks``: full (generation 2)
collections, their seconds, and the seconds of all collections. Wall time is the process's own, from
its start to the verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_reuse import ROOT, project  # noqa: E402 - the projects and models the reuse benchmark times
from measure import host, pairs  # noqa: E402

COUNTED = """
import contextlib, gc, json, os, sys, time
start, seen = time.perf_counter(), {"full": 0, "full_s": 0.0, "all_s": 0.0}
began = [0.0]
def count(phase, info):
    if phase == "start":
        began[0] = time.perf_counter()
        return
    took = time.perf_counter() - began[0]
    seen["all_s"] += took
    if info["generation"] == 2:
        seen["full"] += 1
        seen["full_s"] += took
gc.callbacks.append(count)
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "unfrozen":
    import gate.commands.prepare as prepare
    prepare._frozen = contextlib.nullcontext
from gate.cli.app import main
sys.argv = ["parity-gate", "check"]
try:
    main()
except SystemExit:
    pass
seen["wall_s"] = time.perf_counter() - start
print("GC " + json.dumps(seen), file=sys.stderr)
"""


def one(folder: Path, store: Path, how: str) -> dict:
    env = {**os.environ, "PARITY_GATE_CACHE_DIR": str(store), "BENCH_CODE_CHANGE": "1",
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", COUNTED, str(ROOT), how], cwd=folder, env=env,
                          capture_output=True, text=True)
    line = next((x for x in proc.stderr.splitlines() if x.startswith("GC ")), None)
    if line is None:
        raise SystemExit(f"the check failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(line[3:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["resnet18", "gpt2x512"])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    print(host("torch", "transformers"), flush=True)
    print("| model | heap | full collections | full s | all collections s | wall s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
            folder, cache = project(Path(tmp) / "p", model), Path(tmp) / "cache"
            subprocess.run([sys.executable, "-m", "gate.cli", "update-baseline"], cwd=folder, check=True,
                           capture_output=True, env={**os.environ, "PARITY_GATE_CACHE_DIR": str(cache),
                                                     "PYTHONPATH": str(ROOT)})
            for i, order in enumerate(pairs(args.repeat, ("frozen", "unfrozen"))):
                for how in order:
                    store = Path(tmp) / f"{how}-{i}"
                    shutil.copytree(cache, store)
                    seen = one(folder, store, how)
                    print(f"| {model} | {how} | {seen['full']} | {seen['full_s']:.2f} | {seen['all_s']:.2f} "
                          f"| {seen['wall_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: two checkouts of parity-gate against each other on one path, paired round by round.

    PYTHONPATH=. python scripts/bench_versions.py --before /path/to/checkout [--after .] --change code
        [--models gpt2x512 gpt2x2048] [--repeat 4] [--json out.json]

A change to the gate that is a few percent either way is lost in a comparison of two runs of
scripts/bench_reuse.py an hour apart: a shared host's phase moves the recipe by more. Here each round
runs both checkouts' ``check`` back to back on the same model (the order alternating), each from its own
copy of its own store: ``update-baseline`` first per checkout (not timed; the keys hold the gate's
source digest, so one checkout's store is a miss for the other). ``--change``: ``none`` (the store hit),
``weight`` or ``code`` (bench_reuse.py's changes). Printed per model: each checkout's median wall, CPU
time and peak (the process tree, scripts/measure.py) with their range, the per-round ratios after/before,
and the path each run took.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_reuse  # noqa: E402
import measure  # noqa: E402
from bench_reuse import _spread  # noqa: E402 - one way to print a median and its range
from measure import host, measured, pairs, path_taken  # noqa: E402

CHANGES = {"none": {}, "weight": {"BENCH_CHANGE": "1"}, "code": {"BENCH_CODE_CHANGE": "1"}}


def rounds(model: str, checkouts: dict[str, Path], change: str, repeat: int, work: Path) -> dict[str, list]:
    runs: dict[str, list] = {side: [] for side in checkouts}
    for side, code in checkouts.items():
        folder = bench_reuse.project(work / side, model)
        measured(bench_reuse.gate(code) + ["update-baseline"], folder,
                 {"PYTHONPATH": str(code), "PARITY_GATE_CACHE_DIR": str(work / f"{side}-store")})
    for i, order in enumerate(pairs(repeat, tuple(checkouts))):  # type: ignore[arg-type]
        for side in order:
            folder, store = work / side, work / f"{side}-{i}"
            shutil.copytree(work / f"{side}-store", store)
            (folder / "report.json").unlink(missing_ok=True)
            env = {"PYTHONPATH": str(checkouts[side]), "PARITY_GATE_CACHE_DIR": str(store), **CHANGES[change]}
            r = measured(bench_reuse.gate(checkouts[side]) + ["check", "--json", "report.json"], folder, env)
            report = json.loads((folder / "report.json").read_text())
            path = path_taken(report, r.proc.stderr)
            runs[side].append({"wall": r.wall_s, "cpu": r.cpu_s, "peak": r.peak_gb, "path": path})
            shutil.rmtree(store, ignore_errors=True)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True, help="the checkout to compare with")
    ap.add_argument("--after", type=Path, default=bench_reuse.ROOT,
                    help="the checkout measured (default: this one)")
    ap.add_argument("--change", choices=sorted(CHANGES), default="code")
    ap.add_argument("--models", nargs="+", default=["gpt2x512"], choices=sorted(bench_reuse.MODELS_RUN))
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    measure.own_cache()  # never the user's store
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    print(host("torch", "onnxruntime"))
    print(f"change: {args.change}; {args.repeat} rounds, the order alternating; "
          "wall s, CPU s (the process tree's user + system), peak GB: median (range)")
    print("| model | checkout | wall s | CPU s | peak GB | after / before: wall, CPU, peak | path |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    results = {}
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="parity-gate-versions-") as tmp:
            runs = results[model] = rounds(model, checkouts, args.change, args.repeat, Path(tmp))
        paired = list(zip(runs["after"], runs["before"], strict=True))
        for side in checkouts:
            ratios = ", ".join(_spread([a[k] / b[k] for a, b in paired], ".2f")
                               for k in ("wall", "cpu", "peak"))
            said = "; ".join(sorted({r["path"] for r in runs[side]}))
            wall, cpu = (_spread([r[k] for r in runs[side]], ".1f") for k in ("wall", "cpu"))
            peak = _spread([r["peak"] for r in runs[side]], ".2f")
            print(f"| {model} | {side} {checkouts[side]} | {wall} | {cpu} | {peak} | "
                  f"{ratios if side == 'after' else ''} | {said} |")
    if args.json:
        where = {k: str(v) for k, v in checkouts.items()}
        said = {"change": args.change, "checkouts": where, "runs": results}
        args.json.write_text(json.dumps(said, indent=1))


if __name__ == "__main__":
    main()

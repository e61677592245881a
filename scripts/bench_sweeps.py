#!/usr/bin/env python3
"""Benchmark the bundled sweep suite and gradients (not a test; figures go to docs/performance.md).

    PYTHONPATH=. python scripts/bench_sweeps.py [--openvino-python .venv-openvino/bin/python]
                                                [--sizes 10 40] [--no-full-check] [--repeat 3]
                                                [--skip-suite] [--skip-scaling] [--skip-gradients]

1. The suite across torch-cpu, CPUExecutionProvider and the OpenVINO EP (in its own environment):
   `export` (build, export, float64 reference, torch-cpu), `collect` here (CPU EP), `collect` in the
   OpenVINO venv, `report` against the committed baselines. Wall time per stage, total, per case.
2. How `check` (torch-cpu + CPU EP) grows with the number of cases: the first N cases, then all
   (unless --no-full-check).
3. `gradients = true` against forward only on two bundled models: `check` wall time and peak memory,
   --repeat rounds of one check of each (the first alternating); ratios are the median of the
   rounds' ratios with their range.
Every command runs in its own process; peak memory is its process tree's (the gate and its ONNX
Runtime workers), as scripts/measure.py takes it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from measure import Spread, host, measured, own_cache, pairs

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "examples" / "sweeps.toml"


def run(argv: list[str], cwd: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, peak MiB of the process tree) of one command; exit codes 0/1 accepted."""
    # The whole path each time (a matching content key costs less: scripts/bench_reuse.py).
    r = measured(argv, cwd, {"PYTHONPATH": str(ROOT), "PARITY_GATE_FULL": "1"})
    return r.wall_s, r.peak_mib


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gate.cli", *args]


def cases() -> list[str]:
    from gate.config import load_config

    return [m.name for m in load_config(SUITE).models]


def suite(ov_python: str | None, tmp: Path) -> dict:
    n = len(cases())
    out = {"cases": n}
    out["export"] = run(cli("export", "--config", str(SUITE), "--provider", "torch-cpu", "--out", str(tmp / "x")))[0]
    out["collect_cpu"] = run(cli("collect", "--from", str(tmp / "x"), "--config", str(SUITE), "--provider",
                                 "CPUExecutionProvider", "--out", str(tmp / "cpu.msgpack.zst")))[0]
    files = [str(tmp / "x"), str(tmp / "cpu.msgpack.zst")]
    if ov_python:
        out["collect_openvino"] = run([ov_python, "-m", "gate.cli", "collect", "--from", str(tmp / "x"), "--provider",
                                       "OpenVINOExecutionProvider", "--out", str(tmp / "ov.msgpack.zst")])[0]
        files.append(str(tmp / "ov.msgpack.zst"))
    out["report"] = run(cli("report", "--config", str(SUITE), "--json", str(tmp / "r.json"), *files))[0]
    out["total"] = sum(v for k, v in out.items() if k != "cases")
    out["per_case"] = out["total"] / n
    report = json.loads((tmp / "r.json").read_text())
    out["verdict"] = report["verdict"]
    return out


def scaling(sizes: list[int], full: bool) -> list[dict]:
    names, rows = cases(), []
    for n in [*sizes, *([len(names)] if full else [])]:
        selected = [a for name in names[:n] for a in ("--model", name)]
        wall, peak = run(cli("check", "--config", str(SUITE), *selected))
        rows.append({"cases": n, "wall_s": wall, "per_case_s": wall / n, "peak_mib": peak})
    return rows


GRAD_MODELS = {"tiny-cnn": ("examples.zoo:tiny_cnn", "[2, 3, 32, 32]"),
               "tiny-transformer": ("examples.zoo:tiny_transformer", "[2, 8, 16]")}


def gradients(tmp: Path, repeat: int) -> Iterator[dict]:
    for name, (factory, shape) in GRAD_MODELS.items():
        for grads in ("false", "true"):
            folder = tmp / f"{name}-{grads}"
            folder.mkdir()
            (folder / "parity-gate.toml").write_text(
                f'providers = ["torch-cpu", "CPUExecutionProvider"]\n[[models]]\nname = "{name}"\n'
                f'factory = "{factory}"\ninputs = [{{ name = "x", shape = {shape} }}]\ngradients = {grads}\n')
            run(cli("update-baseline"), cwd=folder)
        runs: dict[str, list[tuple[float, float]]] = {"false": [], "true": []}
        for order in pairs(repeat, ("false", "true")):
            for grads in order:
                runs[grads].append(run(cli("check"), cwd=tmp / f"{name}-{grads}"))
        med = {g: (statistics.median(w for w, _ in r), statistics.median(m for _, m in r)) for g, r in runs.items()}
        yield {"model": name, "forward_s": med["false"][0], "gradients_s": med["true"][0],
               "forward_peak_mib": med["false"][1], "gradients_peak_mib": med["true"][1],
               "wall_ratio": Spread.of([w for w, _ in runs["true"]], [w for w, _ in runs["false"]]).fmt(),
               "peak_ratio": Spread.of([m for _, m in runs["true"]], [m for _, m in runs["false"]]).fmt()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--openvino-python", default=os.environ.get("PARITY_GATE_OPENVINO_PYTHON"))
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 40])
    ap.add_argument("--skip-suite", action="store_true", help="skip part 1 (the suite's export, collect, report)")
    ap.add_argument("--skip-scaling", action="store_true", help="skip part 2 (check against the number of cases)")
    ap.add_argument("--no-full-check", action="store_true", help="time check on --sizes cases only, not all")
    ap.add_argument("--skip-gradients", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the gradients comparison (>= 3 to publish)")
    args = ap.parse_args()
    own_cache()  # never the user's store
    print(host("torch", "onnx", "onnxruntime"), flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="parity-gate-bench-sweeps-"))
    try:
        if not args.skip_suite:
            s = suite(args.openvino_python, tmp)
            print("suite:", json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in s.items()}),
                  flush=True)
        if not args.skip_scaling:
            for row in scaling(args.sizes, not args.no_full_check):
                print("check:", json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}),
                      flush=True)
        if not args.skip_gradients:
            for row in gradients(tmp, args.repeat):
                print("gradients:", json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                                for k, v in row.items()}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}; peak RSS of this script {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

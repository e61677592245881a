"""Benchmarks for the provider machinery.

    PYTHONPATH=. python scripts/bench_providers.py [--repeat 3]

1. Worker isolation: `check --full` (every stage computed) on the example models with ONNX Runtime
   providers in worker processes versus in-process (same config, same process; one untimed check of each first):
   --repeat rounds of one check of each,
   the first of a round alternating; medians, and the overhead as the median of the rounds' ratios
   with its range.
2. `report` over 10 result files of a 150-layer model (10 runners' worth of providers):
   the library call, and the whole `parity-gate report` process including start-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import Spread, host, own_cache, pairs  # noqa: E402

from gate import commands  # noqa: E402
from gate.config import Isolation, load_config  # noqa: E402
from gate.formats.results import read_runs, write_runs  # noqa: E402


def isolation_overhead(repeat: int) -> None:
    cfg = load_config(ROOT / "pyproject.toml")
    times: dict[bool, list[float]] = {True: [], False: []}
    for enabled in (False, True):  # not timed: the first check in a process pays imports and first calls
        c = dataclasses.replace(cfg, isolation=Isolation(enabled=enabled))
        commands.check(c, c.models, c.providers, full=True)
    for order in pairs(repeat, (False, True)):
        for enabled in order:
            c = dataclasses.replace(cfg, isolation=Isolation(enabled=enabled))
            start = time.perf_counter()
            report = commands.check(c, c.models, c.providers, full=True).to_dict()  # the whole path
            times[enabled].append(time.perf_counter() - start)
            assert report["verdict"] == "pass", report["first_regression"]
    inproc, isolated = statistics.median(times[False]), statistics.median(times[True])
    overhead = Spread(tuple(100 * (r - 1) for r in Spread.of(times[True], times[False]).values))
    print(f"check, example models (2 models, torch-cpu + CPUExecutionProvider), {repeat} rounds:")
    print(f"  in-process {inproc:.2f} s · isolated workers {isolated:.2f} s (medians) · overhead "
          f"{overhead.fmt(1, '%')}")


def report_speed(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "deep.py").write_text(textwrap.dedent("""
            from torch import nn
            def deep():
                layers = []
                for _ in range(74):
                    layers += [nn.Linear(64, 64), nn.Tanh()]
                return nn.Sequential(*layers)
        """))
        (work / "parity-gate.toml").write_text(textwrap.dedent("""
            providers = ["torch-cpu", "CPUExecutionProvider"]
            [[models]]
            name = "deep"
            factory = "deep:deep"
            inputs = [{ name = "x", shape = [8, 64] }]
        """))
        cfg = load_config(work / "parity-gate.toml")
        commands.update_baseline(cfg, cfg.models, cfg.providers)
        commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), work / "export")
        commands.collect(work / "export", cfg.select_providers(["CPUExecutionProvider"]), work / "cpu.msgpack.zst")
        (run,) = read_runs(work / "cpu.msgpack.zst")
        layers = len(run.layers)
        files = []
        for i in range(10):  # ten runners: the same provider on ten device classes
            for p in run.providers:
                p.target = dataclasses.replace(p.target, device_class=f"bench-{i}")
            files.append(work / f"r{i}.msgpack.zst")
            write_runs(files[-1], [run])
        lib, proc = [], []
        for _ in range(repeat):
            start = time.perf_counter()
            report = commands.report_files(cfg, files).to_dict()
            lib.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "gate.cli", "report", *map(str, files), "--json", "r.json"],
                           cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, check=False)
            proc.append(time.perf_counter() - start)
        rows = sum(len(p["layers"]) for p in report["models"][0]["providers"])
        print(f"report, 10 result files of a {layers}-layer model ({rows} layer rows), median of {repeat}:")
        print(f"  library call {statistics.median(lib):.2f} s · `parity-gate report` process "
              f"{statistics.median(proc):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    own_cache()  # never the user's store
    from gate.fingerprint import backend

    print(host("torch", "onnx", "onnxruntime") + f"; fingerprint backend {backend}")
    isolation_overhead(args.repeat)
    report_speed(args.repeat)


if __name__ == "__main__":
    main()

"""Rounding noise against the default floor, on the bundled examples: how far each float32 runtime
sits from the float64 reference per layer, and how much another thread count moves it.

    PYTHONPATH=. python scripts/bench_noise.py [--threads 1]

In a temporary folder (the committed baselines are not touched): `update-baseline` with the default
thread count, then `check` with PARITY_GATE_THREADS=--threads, each in a fresh process, providers
torch-cpu + CPUExecutionProvider. From the check's JSON report: the float64 reference's drift against
its baseline, each runtime's per-layer relative L2 error against the reference (the runs at the other
thread count), how far that error moved from the baseline's, and the default floor as a multiple of
the errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from measure import host, measured, own_cache

from gate.config.types import Tolerance

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """baseline-dir = "baselines"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "tiny-cnn"
factory = "examples.zoo:tiny_cnn"
inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]

[[models]]
name = "tiny-transformer"
factory = "examples.zoo:tiny_transformer"
inputs = [{ name = "x", shape = [2, 8, 16], dtype = "float32" }]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="PARITY_GATE_THREADS of the check")
    args = ap.parse_args()
    own_cache()  # never the user's store
    print(host("torch", "onnxruntime") + f"; baseline at the default threads ({os.cpu_count()} CPUs), "
          f"check at {args.threads}")
    with tempfile.TemporaryDirectory(prefix="bench-noise-") as tmp:
        work = Path(tmp)
        (work / "parity-gate.toml").write_text(CONFIG)
        env = {"PYTHONPATH": str(ROOT), "PARITY_GATE_FULL": "1"}  # the whole path every run
        measured([sys.executable, "-m", "gate.cli", "update-baseline"], work, env, ok=(0,))
        measured([sys.executable, "-m", "gate.cli", "check", "--json", "r.json"], work,
                 {**env, "PARITY_GATE_THREADS": str(args.threads)})
        report = json.loads((work / "r.json").read_text())
    floor = Tolerance().floor
    print(f"verdict {report['verdict']}")
    for model in report["models"]:
        for p in model["providers"]:
            rows = [r for r in p["layers"] if r["value"] is not None]
            if not rows:
                continue
            values = [r["value"] for r in rows]
            if p["device"] == "cpu":  # the float64 reference
                print(f"{model['name']}, {p['name']} float64 reference: drift against its baseline at most "
                      f"{max(values):.3g} over {len(rows)} layers")
                continue
            moved = [abs(r["value"] - r["baseline"]) for r in rows if r["baseline"] is not None]
            low = min((v for v in values if v > 0), default=float("nan"))
            print(f"{model['name']}, {p['name']} ({p['device']}): error against the reference {min(values):.2g} to "
                  f"{max(values):.2g} over {len(rows)} layers; moved by at most {max(moved):.2g} from the "
                  f"baseline's; floor {floor:g} = {floor / max(values):.1f}x to {floor / low:.1f}x the error (the smallest non-zero)")


if __name__ == "__main__":
    main()

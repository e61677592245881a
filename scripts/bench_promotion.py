"""The float64 reference with and without cast promotion, on transformers models (random weights).

For each model of examples/transformers_zoo.py: the casts promoted, the layers whose reference is
below float64 when the forward runs as written, and each float32 runtime's per-layer relative L2
error against the reference (worst and median), promoted and as written. Then the refactor
(softmax as exp(x - logsumexp(x)), still in float32): how far it moves the reference's output.

    PYTHONPATH=. python scripts/bench_promotion.py [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import own_cache  # noqa: E402

from gate.config import load_config  # noqa: E402
from gate.core.device import cpu_name  # noqa: E402
from gate.fingerprint import relative_error  # noqa: E402
from gate.pipeline.run import run_model  # noqa: E402

MODELS = ("llama", "mistral", "qwen2", "bert", "gpt2")


def config(tmp: Path, factory: str):
    path = tmp / "parity-gate.toml"
    path.write_text('providers = ["torch-cpu", "CPUExecutionProvider"]\n[[models]]\n'
                    f'name = "{factory.replace("_", "-")}"\nfactory = "examples.transformers_zoo:{factory}"\n'
                    'inputs = [{ name = "input_ids", shape = [1, 16], dtype = "int64", low = 0, high = 128 }]\n')
    return load_config(path)


def run(tmp: Path, factory: str, promote: bool):
    cfg = config(tmp, factory)
    spec = dataclasses.replace(cfg.models[0], reference_promotion=promote)
    return run_model(cfg, spec, cfg.providers)


def errors(model_run) -> dict[str, tuple[float, float]]:
    out = {}
    for p in model_run.providers:
        errs = [pl.err for pl in p.layers.values() if pl.err is not None]
        out[f"{p.name} {p.precision}"] = (max(errs), statistics.median(errs))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    own_cache()  # never the user's store
    print(f"CPU: {cpu_name()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for factory in MODELS:
            promoted, written = run(Path(tmp), factory, True), run(Path(tmp), factory, False)
            row = {"model": factory, "casts_promoted": sum((promoted.meta.promoted or {}).values()),
                   "below_float64_as_written": len(written.meta.below_float64 or {}),
                   "promoted": errors(promoted), "as_written": errors(written)}
            rows.append(row)
        moved = {}
        for promote in (True, False):
            a, b = run(Path(tmp), "llama", promote), run(Path(tmp), "llama_refactored", promote)
            moved[promote] = relative_error(b.layers[-1].fp, a.layers[-1].fp)
    print("\n| model | casts promoted | layers below float64 as written | runtime | worst / median error, promoted "
          "| worst / median error, as written |")
    print("| --- | ---: | ---: | --- | --- | --- |")
    for row in rows:
        for runtime, (worst, median) in row["promoted"].items():
            w2, m2 = row["as_written"][runtime]
            print(f"| {row['model']} | {row['casts_promoted']} | {row['below_float64_as_written']} | {runtime} | "
                  f"{worst:.3g} / {median:.3g} | {w2:.3g} / {m2:.3g} |")
    print(f"\nllama, softmax refactored (same math): the reference's output moves by {moved[True]:.3g} promoted, "
          f"{moved[False]:.3g} as written")
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_name(), "rows": rows, "refactor_moves": {
            "promoted": moved[True], "as_written": moved[False]}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What ships, measured: post-export transforms and dynamic shapes on resnet18 and a BERT-like model
(random weights, nothing downloaded).

For each transform (none, float16 conversion, the ONNX Runtime transformer optimizer, int8 dynamic
quantization): the layers whose value survives in the shipped graph, the worst per-layer relative
L2 error of CPUExecutionProvider against the float64 reference, and the output's max-abs error.
Then `check --full` wall time (every stage computed: the exports are what is counted) for 3 batch
sizes through one dynamic graph against 3 static exports, in
--repeat paired rounds (the ratio: the median of the rounds' ratios, with its range).

    PYTHONPATH=. python scripts/bench_transforms.py [--json out.json] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import Spread, host, own_cache, pairs  # noqa: E402

from gate import commands  # noqa: E402
from gate.config import load_config  # noqa: E402
from gate.core.device import cpu_name  # noqa: E402
from gate.pipeline.run import run_model  # noqa: E402

MODELS = {
    "resnet18": ("examples.torchvision_zoo:resnet18", '[{ name = "x", shape = [1, 3, 224, 224] }]'),
    "bert-like": ("examples.transformers_zoo:bert_like",
                  '[{ name = "input_ids", shape = [1, 64], dtype = "int64", low = 0, high = 128 }]'),
}
TRANSFORMS = {"none": None, "float16": "float16", "optimizer": "bert_optimized", "int8 dynamic": "int8_dynamic"}


def config(tmp: Path, name: str, factory: str, inputs: str, extra: str = "") -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(f'baseline-dir = "b"\nproviders = ["CPUExecutionProvider"]\n[[models]]\nname = "{name}"\n'
                    f'factory = "{factory}"\ninputs = {inputs}\n{extra}\n')
    return path


def transform_row(tmp: Path, model: str, transform: str | None) -> dict:
    factory, inputs = MODELS[model]
    extra = f'transform = "examples.transforms:{transform}"' if transform else ""
    cfg = load_config(config(tmp, model, factory, inputs, extra))
    run = run_model(cfg, cfg.models[0], cfg.providers)
    if not run.providers:
        raise SystemExit(f"{model} ({transform}): {run.error}")
    (ort,) = run.providers
    errs = [pl.err for pl in ort.layers.values() if pl.err is not None]
    output = next(pl for name, pl in ort.layers.items() if name.startswith("(model)"))
    sites = run.onnx_map.values()
    return {"layers": len(run.layers), "survive": sum(s.kind in ("value", "output") for s in sites),
            "precision": ort.precision, "worst_error": max(errs) if errs else None,
            "output_max_abs": output.exact["max_abs"] if output.exact else None}


def dynamic_vs_static(tmp: Path, repeat: int) -> dict[str, list[float]]:
    """`check` wall time (in this process) of resnet18 at 3 batch sizes: one dynamic graph against
    three static exports, in --repeat rounds of one of each, the first alternating."""
    factory, _ = MODELS["resnet18"]
    inputs = '[{ name = "x", shape = [1, 3, 224, 224] }]'
    extras = {"one dynamic graph": 'dynamic-shapes = { x = { 0 = "batch" } }\nbatch-sizes = [1, 2, 4]',
              "three static exports": "batch-sizes = [1, 2, 4]"}
    out: dict[str, list[float]] = {label: [] for label in extras}
    for order in pairs(repeat, tuple(extras)):
        for label in order:
            cfg = load_config(config(tmp, "resnet18", factory, inputs, extras[label]))
            start = time.perf_counter()
            commands.check(cfg, cfg.models, cfg.providers, full=True)  # the exports counted: none reused
            out[label].append(time.perf_counter() - start)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the dynamic/static timing (>= 3 to publish)")
    args = parser.parse_args()
    own_cache()  # never the user's store
    print(host("torch", "onnx", "onnxruntime", "transformers"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            for label, transform in TRANSFORMS.items():
                if label == "optimizer" and model != "bert-like":
                    continue  # the transformer optimizer fuses attention, LayerNorm, GELU: BERT's
                rows.append({"model": model, "transform": label, **transform_row(Path(tmp), model, transform)})
        timing = dynamic_vs_static(Path(tmp), args.repeat)
    print("\n| model | transform | precision | layers with a value | worst per-layer error | output max-abs |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['model']} | {r['transform']} | {r['precision']} | {r['survive']} of {r['layers']} | "
              f"{r['worst_error']:.3g} | {r['output_max_abs']:.3g} |")
    static, dynamic = timing["three static exports"], timing["one dynamic graph"]
    print(f"\nresnet18, 3 batch sizes (1, 2, 4), check wall time, medians of {args.repeat} rounds: one dynamic graph "
          f"{statistics.median(dynamic):.1f} s, three static exports {statistics.median(static):.1f} s; static / dynamic "
          f"{Spread.of(static, dynamic).fmt()}")
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_name(), "rows": rows, "dynamic_vs_static_s": timing}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

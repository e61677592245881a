"""Benchmark: `parity-gate check` with content-addressed reuse against the whole-output recipe.

    PYTHONPATH=. python scripts/bench_reuse.py [--models resnet18 bert gpt2x512 gpt2x2048] [--repeat 3]
        [--today /path/to/a/checkout/before/reuse] [--json out.json]

Per model (random weights from configs, nothing downloaded; providers torch-cpu + CPUExecutionProvider),
`update-baseline` first (not timed; it records the content key and stores the export), then per repeat,
each side in a fresh process, each `check` paired with a recipe run beside it (the recipe first in
even repeats, the check first in odd ones): the recipe (export, one torch run, one ONNX Runtime run
from the file, np.allclose) and

- `warm`: `check`, the key matches and the export cache holds the graph;
- `cold`: `check`, the key matches, an empty cache folder (the graph is exported and stored);
- `changed`: `check` after a model change (one weight scaled by 1 + 1e-3: the key changes, the whole
  path runs; an empty cache folder, as on the first run of a pull request that changes the model);
- `today` (with `--today`): `check` of that checkout on its own baseline: the gate before reuse.

Wall time and peak RSS of the whole process tree (the gate and its ONNX Runtime worker), sampled every
50 ms (``measure.measured``). Reported: per side the median and range of wall and peak, and the
median and range of the per-pair ratio to the recipe.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import RECIPE_RUN, host, measured, pairs  # noqa: E402 - the process-tree sampler every benchmark uses

ROOT = Path(__file__).resolve().parents[1]

MODELS = textwrap.dedent("""
    import os
    import torch

    def _changed(model):
        if os.environ.get("BENCH_CHANGE"):  # a model change: one weight moved by 1e-3
            with torch.no_grad():
                next(model.parameters()).mul_(1 + 1e-3)
        return model

    def resnet18():
        import torchvision
        return _changed(torchvision.models.resnet18(weights=None))

    def bert():
        from transformers import BertConfig, BertModel
        return _changed(BertModel(BertConfig(attn_implementation="eager")))

    def gpt2(seq):
        def build():
            from transformers import GPT2Config, GPT2Model
            return _changed(GPT2Model(GPT2Config(n_layer=12, n_positions=max(seq, 1024), use_cache=False,
                                                 attn_implementation="eager")))
        return build

    gpt2x512, gpt2x2048 = gpt2(512), gpt2(2048)
""")

INPUTS = {
    "resnet18": '[{ name = "x", shape = [1, 3, 224, 224], dtype = "float32" }]',
    "bert": '[{ name = "input_ids", shape = [1, 128], dtype = "int64", high = 30000 }]',
    "gpt2x512": '[{ name = "input_ids", shape = [1, 512], dtype = "int64", high = 50257 }]',
    "gpt2x2048": '[{ name = "input_ids", shape = [1, 2048], dtype = "int64", high = 50257 }]',
}

# The recipe, on the same model and the same inputs the gate generates (gate.model.inputs).
RECIPE = textwrap.dedent("""
    import sys, numpy as np, torch, onnxruntime as ort
    sys.path.insert(0, ".")
    import bench_models
    from gate.config import load_config
    from gate.model.inputs import generate
    spec = load_config(__import__("pathlib").Path("parity-gate.toml")).models[0]
    torch.manual_seed(spec.seed)
    model = getattr(bench_models, sys.argv[1])().eval()
    x = torch.from_numpy(generate(spec.inputs, spec.seed)[0])
""") + RECIPE_RUN


def project(folder: Path, model: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_models.py").write_text(MODELS)
    (folder / "recipe.py").write_text(RECIPE)
    (folder / "parity-gate.toml").write_text(
        f'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
        f'[[models]]\nname = "{model}"\nfactory = "bench_models:{model}"\ninputs = {INPUTS[model]}\n')
    return folder


def gate(code: Path) -> list[str]:
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(code)!r}); from gate.cli.app import main; "
            "sys.argv[0] = 'parity-gate'; main()"]


def run_model(model: str, repeat: int, today: Path | None, work: Path) -> dict:
    here = project(work / "reuse", model)
    cache = work / "cache"
    env = {"PARITY_GATE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    measured(gate(ROOT) + ["update-baseline"], here, env)
    if today is not None:
        before = project(work / "today", model)
        measured(gate(today) + ["update-baseline"], before, {"PYTHONPATH": str(today), "PARITY_GATE_CACHE_DIR": "off"})
    sides: dict[str, list[dict]] = {k: [] for k in ("recipe", "warm", "cold", "changed", "today")}

    def check(side: str, folder: Path, code: Path, extra: dict, i: int) -> None:
        runs = {}
        for which in pairs(i + 1, ("recipe", "check"))[i]:
            if which == "recipe":
                runs[which] = measured([sys.executable, "recipe.py", model], folder, {"PYTHONPATH": str(code)})
                if "allclose" not in runs[which].proc.stdout:
                    raise SystemExit(f"the recipe failed for {model}:\n{runs[which].proc.stderr[-3000:]}")
            else:
                runs[which] = measured(gate(code) + ["check", "--json", "report.json"], folder,
                                       {"PYTHONPATH": str(code), **extra})
        r, c = runs["recipe"], runs["check"]
        sides["recipe"].append({"wall": r.wall_s, "peak": r.peak_gb})
        reuse = json.loads((folder / "report.json").read_text())["models"][0].get("reuse") or {}
        sides[side].append({"wall": c.wall_s, "peak": c.peak_gb, "recipe_wall": r.wall_s, "recipe_peak": r.peak_gb,
                            "reference_reused": reuse.get("reference"), "cache": reuse.get("cache"),
                            "why": reuse.get("why")})

    for i in range(repeat):
        check("warm", here, ROOT, env, i)
        check("cold", here, ROOT, {**env, "PARITY_GATE_CACHE_DIR": str(work / f"cold-{i}")}, i)
        check("changed", here, ROOT, {**env, "PARITY_GATE_CACHE_DIR": str(work / f"changed-{i}"), "BENCH_CHANGE": "1"}, i)
        if today is not None:
            check("today", work / "today", today, {"PARITY_GATE_CACHE_DIR": "off"}, i)
    return {k: v for k, v in sides.items() if v}


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def table(model: str, sides: dict) -> list[str]:
    out = []
    rec = sides["recipe"]
    out.append(f"| {model} | recipe | {_spread([r['wall'] for r in rec], '.1f')} | {_spread([r['peak'] for r in rec], '.2f')}"
               " | 1 | 1 | |")
    for side in ("warm", "cold", "changed", "today"):
        runs = sides.get(side)
        if not runs:
            continue
        wall_x = [r["wall"] / r["recipe_wall"] for r in runs]
        peak_x = [r["peak"] / r["recipe_peak"] for r in runs]
        said = {(r["reference_reused"], r["cache"], r["why"]) for r in runs}
        out.append(f"| {model} | check {side} | {_spread([r['wall'] for r in runs], '.1f')} | "
                   f"{_spread([r['peak'] for r in runs], '.2f')} | {_spread(wall_x, '.2f')} | {_spread(peak_x, '.2f')} | "
                   f"{'; '.join(f'reference reused {a}, cache {b}, why {c}' for a, b, c in sorted(said, key=str))} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["resnet18", "bert"], choices=sorted(INPUTS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--today", type=Path, default=None, help="a checkout of parity-gate before reuse, to time too")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    print(host("torch", "onnx", "onnxruntime", "transformers"), flush=True)
    results = {}
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="bench-reuse-") as tmp:
            results[model] = run_model(model, args.repeat, args.today, Path(tmp))
        print("\n".join(table(model, results[model])), flush=True)
    print(f"\n{host()}; median (range) of {args.repeat}; peak = RSS of the process tree, GB")
    print("| model | run | wall s | peak GB | wall x recipe | peak x recipe | reuse |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for model, sides in results.items():
        print("\n".join(table(model, sides)))
    if args.json:
        args.json.write_text(json.dumps({"host": host(), "results": results}, indent=1))


if __name__ == "__main__":
    main()

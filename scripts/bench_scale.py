"""Benchmark: the cost curve of `parity-gate check` against the whole-output recipe as models grow.

    PYTHONPATH=. python scripts/bench_scale.py [--family synthetic gpt2 bert] [--sizes 0.3 0.6 1.2 2.4]
        [--gpt2 12x128 12x512 ...] [--pairs 3] [--png docs/bench_scale.png] [--json rows.json]

Families: `synthetic` (depth x (Linear(4096, 4096) + GELU) + a Linear(4096, 16) head, batch 2;
`--sizes` in GB of float32 weights), `gpt2` (transformers GPT2Model, random weights, batch 1,
`LAYERSxSEQ`), `bert` (BertModel base, random weights, seq 128, batch 1).

Each side runs in its own fresh process (imports included). The recipe: torch.onnx.export(dynamo,
external data), one torch run, one ONNX Runtime run from the file, np.allclose. The gate:
`update-baseline` first (not timed), then `check`. Each row is --pairs rounds of one recipe run and
one check back to back (the first of a round alternating); times and peaks are the rounds' medians,
and each ratio is the median of the rounds' ratios with their range. Both sides are measured alike
(scripts/measure.py). Peak memory is the process tree's (the gate's
process plus its ONNX Runtime worker and its forked reference, which run at the same time), as
scripts/measure.py takes it. The gate's stages are its own progress lines (`gate.core.progress`);
"other" is the rest of the wall: interpreter start, imports, writing the reports. "path" is what each
check ran and where its reference ran. Needs the `bench` extra (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from measure import (
    RECIPE_RUN,
    STAGES,
    Spread,
    host,
    measured,
    own_cache,
    pairs,
    path_taken,
    peak_said,
    stage_seconds,
)

ROOT = Path(__file__).resolve().parents[1]
LAYER_BYTES = (4096 * 4096 + 4096) * 4

MODELS = textwrap.dedent("""
    import torch
    from examples.scale import wide

    def synthetic(depth):
        return lambda: wide(depth)

    def gpt2(layers, seq):
        def build():
            from transformers import GPT2Config, GPT2Model
            return GPT2Model(GPT2Config(n_layer=layers, n_positions=max(seq, 1024), use_cache=False,
                                        attn_implementation="eager"))
        return build

    def bert():
        from transformers import BertConfig, BertModel
        return BertModel(BertConfig(attn_implementation="eager"))
""")

RECIPE = textwrap.dedent("""
    import sys, numpy as np, torch, onnxruntime as ort
    sys.path.insert(0, ".")
    import bench_models
    kind, args = sys.argv[1], [int(a) for a in sys.argv[2:]]
    torch.manual_seed(0)
    model = (bench_models.bert() if kind == "bert" else getattr(bench_models, kind)(*args)()).eval()
    if kind == "synthetic":
        x = torch.randn(2, 4096)
    else:
        x = torch.randint(0, 30000, (1, args[-1] if kind == "gpt2" else 128))
""") + RECIPE_RUN

def _config(work: Path, name: str, factory: str, inputs: str) -> None:
    (work / "parity-gate.toml").write_text(
        f'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
        f'[[models]]\nname = "{name}"\nfactory = "{factory}"\ninputs = {inputs}\n')


def case(kind: str, args: list[int]) -> tuple[str, str, str, float]:
    """(label, factory expression, inputs, weight GB)."""
    if kind == "synthetic":
        return (f"synthetic {args[0] * LAYER_BYTES / 1e9:.1f} GB", f"bench_cases:synthetic_{args[0]}",
                '[{ name = "x", shape = [2, 4096], dtype = "float32" }]', args[0] * LAYER_BYTES / 1e9)
    if kind == "gpt2":
        layers, seq = args
        gb = (124e6 + (layers - 12) * 7.1e6 + max(seq - 1024, 0) * 768) * 4 / 1e9
        return (f"gpt2 L{layers} seq{seq}", f"bench_cases:gpt2_{layers}_{seq}",
                f'[{{ name = "input_ids", shape = [1, {seq}], dtype = "int64", high = 50257 }}]', gb)
    return ("bert-base seq128", "bench_models:bert",
            '[{ name = "input_ids", shape = [1, 128], dtype = "int64", high = 30000 }]', 0.44)


def run_case(kind: str, args: list[int], py: str, n: int) -> dict:
    """``update-baseline`` (not timed), then ``n`` rounds of one recipe run and one check back to
    back, the first of a round alternating."""
    label, factory, inputs, gb = case(kind, args)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        (work / "bench_models.py").write_text(MODELS)
        if kind != "bert":
            fn = f"synthetic_{args[0]}" if kind == "synthetic" else f"gpt2_{args[0]}_{args[1]}"
            (work / "bench_cases.py").write_text(f"import bench_models\n{fn} = bench_models.{kind}({', '.join(map(str, args))})\n")
        (work / "recipe.py").write_text(RECIPE)
        _config(work, kind, factory, inputs)
        # absolute: both sides run in the temporary folder; the whole path (reuse: bench_reuse.py)
        env = {"PYTHONPATH": str(ROOT), "PARITY_GATE_FULL": "1"}
        gate = [py, "-m", "gate.cli"]
        measured(gate + ["update-baseline"], work, env)
        recipe, check, stages, paths = [], [], [], set()
        for order in pairs(n, ("recipe", "check")):
            for side in order:
                if side == "recipe":
                    run = measured([py, "recipe.py", kind, *map(str, args)], work, env)
                    if "allclose" not in run.proc.stdout:  # exit 1: a regression for the gate, a failure here
                        raise SystemExit(f"the recipe failed for {label}:\n{run.proc.stderr[-3000:]}")
                    recipe.append(run)
                    continue
                run = measured(gate + ["check", "--json", "report.json"], work, env)
                check.append(run)
                stages.append(stage_seconds(run.proc.stderr))
                report = json.loads((work / "report.json").read_text())
                paths.add(path_taken(report, run.proc.stderr))
    med = statistics.median
    stage = {name: med(s[name] for s in stages) for name, _ in STAGES}
    return {"label": label, "kind": kind, "args": args, "gb": gb, "verdict": report["verdict"], "pairs": n,
            "recipe_wall": med(r.wall_s for r in recipe), "recipe_peak": med(r.peak_gb for r in recipe),
            "check_wall": med(r.wall_s for r in check), "check_peak": med(r.peak_gb for r in check),
            "wall_ratios": [c.wall_s / r.wall_s for c, r in zip(check, recipe, strict=True)],
            "peak_ratios": [c.peak_bytes / r.peak_bytes for c, r in zip(check, recipe, strict=True)],
            "recipe_walls": [r.wall_s for r in recipe], "check_walls": [r.wall_s for r in check],
            "stages": stage, "path": "; ".join(sorted(paths)),
            "other": med(r.wall_s - sum(s.values()) for r, s in zip(check, stages, strict=True))}


def table(rows: list[dict]) -> str:
    """Markdown: medians of the rounds; each ratio the median of the rounds' ratios and their range."""
    head = ["case", "recipe s", "check s", "wall x", "recipe GB", "check GB", "peak x",
            *(n for n, _ in STAGES), "other", "path"]
    out = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for r in rows:
        wall, peak = Spread(tuple(r["wall_ratios"])), Spread(tuple(r["peak_ratios"]))
        cells = [r["label"], f"{r['recipe_wall']:.1f}", f"{r['check_wall']:.1f}", wall.fmt(),
                 f"{r['recipe_peak']:.2f}", f"{r['check_peak']:.2f}", peak.fmt(),
                 *(f"{r['stages'][n]:.1f}" for n, _ in STAGES), f"{r['other']:.1f}", r.get("path", "")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    syn = [r for r in rows if r["kind"] == "synthetic"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for key, style, name in (("recipe", "o--", "whole-output recipe"), ("check", "s-", "parity-gate check")):
        ax1.plot([r["gb"] for r in syn], [r[f"{key}_wall"] for r in syn], style, label=name)
        ax2.plot([r["gb"] for r in syn], [r[f"{key}_peak"] for r in syn], style, label=name)
    ax1.set(xlabel="float32 weights (GB)", ylabel="wall (s)", title="synthetic family: wall")
    ax2.set(xlabel="float32 weights (GB)", ylabel="peak memory, process tree (GB)", title="synthetic family: peak memory")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def slope(rows: list[dict], key: str) -> float | None:
    syn = [r for r in rows if r["kind"] == "synthetic"]
    if len(syn) < 2:
        return None
    n = len(syn)
    mx, my = sum(r["gb"] for r in syn) / n, sum(r[key] for r in syn) / n
    return sum((r["gb"] - mx) * (r[key] - my) for r in syn) / sum((r["gb"] - mx) ** 2 for r in syn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", nargs="+", default=["synthetic", "gpt2", "bert"])
    ap.add_argument("--sizes", nargs="+", type=float, default=[0.3, 0.6, 1.2, 2.4])
    ap.add_argument("--gpt2", nargs="+", default=["12x128", "12x512", "12x2048", "24x128", "48x128"])
    ap.add_argument("--pairs", type=int, default=3, help="rounds of one recipe run and one check per row (>= 3 to publish)")
    ap.add_argument("--png", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    own_cache()  # never the user's store
    todo: list[tuple[str, list[int]]] = []
    if "synthetic" in args.family:
        todo += [("synthetic", [max(1, round(gb * 1e9 / LAYER_BYTES))]) for gb in args.sizes]
    if "gpt2" in args.family:
        todo += [("gpt2", [int(v) for v in spec.split("x")]) for spec in args.gpt2]
    if "bert" in args.family:
        todo.append(("bert", []))
    print(host("torch", "onnx", "onnxruntime", "transformers") + "; providers torch-cpu + CPUExecutionProvider; "
          f"{args.pairs} rounds per row; {peak_said()}", flush=True)
    rows = []
    for kind, case_args in todo:
        rows.append(run_case(kind, case_args, sys.executable, args.pairs))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
        if args.json:  # a long curve keeps what it measured if it is stopped
            args.json.write_text(json.dumps(rows, indent=1))
    print()
    print(table(rows))
    for key in ("peak", "wall"):
        c, r = slope(rows, f"check_{key}"), slope(rows, f"recipe_{key}")
        if c is not None and r:
            print(f"synthetic slope of {key} per GB: check {c:.2f}, recipe {r:.2f}, ratio {c / r:.2f}")
    if args.png:
        plot(rows, args.png)
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()

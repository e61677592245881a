"""Benchmark: the cost curve of `parity-gate check` against the whole-output recipe as models grow.

    PYTHONPATH=. python scripts/bench_scale.py [--family synthetic gpt2 bert] [--sizes 0.3 0.6 1.2 2.4]
        [--gpt2 12x128 12x512 ...] [--png docs/bench_scale.png] [--max-gb 14]

Families: `synthetic` (depth x (Linear(4096, 4096) + GELU) + a Linear(4096, 16) head, batch 2;
`--sizes` in GB of float32 weights), `gpt2` (transformers GPT2Model, random weights, batch 1,
`LAYERSxSEQ`), `bert` (BertModel base, random weights, seq 128, batch 1).

Each side runs in its own fresh process (imports included). The recipe: torch.onnx.export(dynamo,
external data), one torch run, one ONNX Runtime run from the file, np.allclose. The gate:
`update-baseline` first (not timed), then `check`. Peak memory is the process tree's (the gate's
process plus its ONNX Runtime worker, which run at the same time), RSS summed over the tree and
sampled every 50 ms. The gate's stages are its own progress lines (`gate.core.stages`);
fingerprinting is the time spent in the fingerprint function in every process of the tree
(PARITY_GATE_PROFILE), and falls inside the reference, torch and ORT stages. "other" is the rest
of the wall: interpreter start, imports, writing the reports. Needs the `bench` extra (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

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
    with torch.no_grad():
        torch.onnx.export(model, (x,), "recipe.onnx", dynamo=True, external_data=True)
        out = model(x)
        expected = (out if isinstance(out, torch.Tensor) else out[0]).numpy()
    sess = ort.InferenceSession("recipe.onnx", providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    print("allclose", np.allclose(expected, got, rtol=1e-3, atol=1e-4))
""")

STAGES = (("build", r": building$"), ("export", r": exporting to ONNX$"),
          ("float64 ref", r": float64 reference on torch-cpu$"), ("torch", r": torch-cpu float32$"),
          ("ORT", r": CPUExecutionProvider$"), ("compare", r": comparing with the baseline$"))
TIMED = re.compile(r"^\s+(.*) — ([0-9.]+) s$")


def tree_rss(pid: int) -> int:
    """RSS bytes of ``pid`` and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def measured(argv: list[str], cwd: Path, env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, peak tree RSS in GB, the finished process)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[-3:]} failed ({proc.returncode}):\n{err[-3000:]}")
    return wall, peak[0] / 1e9, done


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


def run_case(kind: str, args: list[int], py: str) -> dict:
    label, factory, inputs, gb = case(kind, args)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        (work / "bench_models.py").write_text(MODELS)
        if kind != "bert":
            fn = f"synthetic_{args[0]}" if kind == "synthetic" else f"gpt2_{args[0]}_{args[1]}"
            (work / "bench_cases.py").write_text(f"import bench_models\n{fn} = bench_models.{kind}({', '.join(map(str, args))})\n")
        (work / "recipe.py").write_text(RECIPE)
        _config(work, kind, factory, inputs)
        env = {"PYTHONPATH": str(ROOT)}  # absolute: both sides run in the temporary folder
        gate = [py, "-m", "gate.cli"]
        measured(gate + ["update-baseline"], work, env)
        r_wall, r_peak, r_proc = measured([py, "recipe.py", kind, *map(str, args)], work, env)
        if "allclose" not in r_proc.stdout:  # exit 1 is a regression for the gate, a failure for the recipe
            raise SystemExit(f"the recipe failed for {label}:\n{r_proc.stderr[-3000:]}")
        profile = work / "profile.txt"
        c_wall, c_peak, c_proc = measured(gate + ["check", "--json", "report.json"], work,
                                          {**env, "PARITY_GATE_PROFILE": str(profile)})
        report = json.loads((work / "report.json").read_text())
        stages = {name: 0.0 for name, _ in STAGES}
        for line in c_proc.stderr.splitlines():
            m = TIMED.match(line)
            if m:
                for name, pattern in STAGES:
                    if re.search(pattern, m.group(1)):
                        stages[name] += float(m.group(2))
        fp = sum(float(line.split()[2]) for line in profile.read_text().splitlines()
                 if line.split()[1] == "fingerprint") if profile.exists() else 0.0
    return {"label": label, "kind": kind, "args": args, "gb": gb, "verdict": report["verdict"],
            "recipe_allclose": "allclose True" in r_proc.stdout, "recipe_wall": r_wall, "recipe_peak": r_peak,
            "check_wall": c_wall, "check_peak": c_peak, "stages": stages, "fingerprint": fp,
            "other": c_wall - sum(stages.values())}


def table(rows: list[dict]) -> str:
    head = (f"{'case':22}{'recipe s':>9}{'check s':>9}{'x':>6}{'recipe GB':>10}{'check GB':>9}{'x':>6}  "
            + "".join(f"{n:>12}" for n, _ in STAGES) + f"{'other':>8}{'fp':>7}{'fp %':>6}")
    out = [head]
    for r in rows:
        out.append(f"{r['label']:22}{r['recipe_wall']:>9.1f}{r['check_wall']:>9.1f}"
                   f"{r['check_wall'] / r['recipe_wall']:>6.2f}{r['recipe_peak']:>10.2f}{r['check_peak']:>9.2f}"
                   f"{r['check_peak'] / r['recipe_peak']:>6.2f}  "
                   + "".join(f"{r['stages'][n]:>12.1f}" for n, _ in STAGES)
                   + f"{r['other']:>8.1f}{r['fingerprint']:>7.1f}{100 * r['fingerprint'] / r['check_wall']:>6.1f}")
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
    ax2.set(xlabel="float32 weights (GB)", ylabel="peak RSS, process tree (GB)", title="synthetic family: peak memory")
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
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", nargs="+", default=["synthetic", "gpt2", "bert"])
    ap.add_argument("--sizes", nargs="+", type=float, default=[0.3, 0.6, 1.2, 2.4])
    ap.add_argument("--gpt2", nargs="+", default=["12x128", "12x512", "12x2048", "24x128", "48x128"])
    ap.add_argument("--png", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    todo: list[tuple[str, list[int]]] = []
    if "synthetic" in args.family:
        todo += [("synthetic", [max(1, round(gb * 1e9 / LAYER_BYTES))]) for gb in args.sizes]
    if "gpt2" in args.family:
        todo += [("gpt2", [int(v) for v in spec.split("x")]) for spec in args.gpt2]
    if "bert" in args.family:
        todo.append(("bert", []))
    rows = []
    for kind, case_args in todo:
        rows.append(run_case(kind, case_args, sys.executable))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    print(f"\ncpu: {cpu}, {os.cpu_count()} cores; providers torch-cpu + CPUExecutionProvider; "
          "peak = RSS of the process tree")
    print(table(rows))
    for key in ("peak", "wall"):
        c, r = slope(rows, f"check_{key}"), slope(rows, f"recipe_{key}")
        if c is not None and r:
            print(f"synthetic slope of {key} per GB: check {c:.2f}, recipe {r:.2f}, ratio {c / r:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.png:
        plot(rows, args.png)
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()

"""Benchmark: `parity-gate check` on the PyTorch GPU providers against the whole-output recipe.

    .venv/bin/python scripts/bench_gpu_torch.py [--json out.json] [--batch 8]

On a CUDA machine: resnet50 (torchvision, random init, batch --batch, 224x224) and a GPT-2-size
transformer (12 pre-norm blocks, d=768, 12 heads, MLP 3072, causal, random init, seq 512, from
embeddings) on torch-cuda and torch-compile-cuda in float32 with TF32 off and on, float16 and
bfloat16. Baselines are taken with TF32 off; the TF32-on run is checked against them, so it shows
what the gate says when a PR flips TF32 (its numerics hint included).

Per configuration, each side in a fresh process: wall time; for `check`, the share of the provider's
run spent fingerprinting (CUDA synchronised before each fingerprint, so the forward's own kernels
are not counted) and torch.cuda.max_memory_allocated of the provider's run (in its worker, read by
a PARITY_GATE_WORKER_HOOK); for the recipe (model on the GPU in that precision, one forward, output
copied to the host and np.allclose against a float32 CPU forward), the same peak. Then per model a
per-layer table of each configuration's relative error against the float64 reference.

Without a CUDA device it prints one line saying so and exits 0. ``--device cpu --small`` runs the
same flow on torch-cpu / torch-compile with small models, to test the script itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from measure import own_cache

ROOT = Path(__file__).resolve().parents[1]

MODELS = textwrap.dedent('''
    import os, torch, torchvision
    from torch import nn

    def _numerics():  # a model's code flipping TF32, as a PR would
        on = os.environ.get("BENCH_TF32") == "1"
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on

    class Block(nn.Module):
        def __init__(self, d, heads, ff):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

        def forward(self, x):
            n = x.shape[1]
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1)
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, d, layers, heads, ff, seq, vocab):
            super().__init__()
            self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
            self.blocks = nn.Sequential(*[Block(d, heads, ff) for _ in range(layers)])
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, x):
            return self.head(self.ln_f(self.blocks(x + self.pos)))

    def resnet50():
        _numerics()
        return torchvision.models.resnet50(weights=None)

    def resnet18():
        _numerics()
        return torchvision.models.resnet18(weights=None)

    def gpt2_size():
        _numerics()
        return GPT(768, 12, 12, 3072, 512, 50257)

    def gpt_small():
        _numerics()
        return GPT(64, 2, 4, 256, 32, 1000)
''')

HOOK = textwrap.dedent('''
    import atexit, json, os, time

    def install(job):
        import torch
        from gate.runners import torch_eager, torch_hooks
        p = job.provider  # a gate.runners.job.WorkerJob
        stats = {"provider": {"name": p.name, "options": dict(p.options), "precision": p.precision,
                              "session_options": dict(p.session_options)},
                 "fingerprint_s": 0.0, "fingerprints": 0, "run_s": None}
        inner = torch_hooks.fingerprint_of

        def timed_fingerprint(t):
            if t.is_cuda:
                torch.cuda.synchronize()  # the forward's pending kernels are not the fingerprint's time
            t0 = time.perf_counter()
            fp = inner(t)
            stats["fingerprint_s"] += time.perf_counter() - t0
            stats["fingerprints"] += 1
            return fp

        run = torch_eager.TorchEagerRunner.run

        def timed_run(self):
            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            try:
                return run(self)
            finally:
                stats["run_s"] = time.perf_counter() - t0

        torch_hooks.fingerprint_of = timed_fingerprint
        torch_eager.TorchEagerRunner.run = timed_run

        def dump():
            cuda = torch.cuda.is_available()
            stats["max_memory_allocated"] = torch.cuda.max_memory_allocated() if cuda else None
            with open(os.environ["BENCH_STATS"], "a") as f:
                f.write(json.dumps(stats) + "\\n")
        atexit.register(dump)
''')

RECIPE = textwrap.dedent('''
    import json, sys, time, numpy as np, torch
    import bench_models
    t0 = time.perf_counter()
    factory, shape, device, precision = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    torch.manual_seed(0)
    model = getattr(bench_models, factory)().eval()
    x = torch.randn(*shape)
    with torch.no_grad():
        expected = model(x).numpy()
        dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[precision]
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        got = model.to(device=device, dtype=dtype)(x.to(device=device, dtype=dtype)).float().cpu().numpy()
    rtol, atol = (1e-3, 1e-4) if precision == "float32" else (5e-2, 5e-2)
    print(json.dumps({"allclose": bool(np.allclose(expected, got, rtol=rtol, atol=atol)),
                      "max_memory_allocated": torch.cuda.max_memory_allocated() if device == "cuda" else None,
                      "inner_s": time.perf_counter() - t0}))
''')


def configs(device: str) -> list[dict]:
    eager, compiled = ("torch-cuda", "torch-compile-cuda") if device == "cuda" else ("torch-cpu", "torch-compile")
    out = []
    for provider in (eager, compiled):
        for label, precision, tf32 in (("fp32", "float32", "0"), ("fp32+tf32", "float32", "1"),
                                       ("fp16", "float16", "0"), ("bf16", "bfloat16", "0")):
            out.append({"provider": provider, "label": label, "precision": precision, "tf32": tf32})
    return out


def write_config(work: Path, model: dict, cfg: dict) -> None:
    inputs = ", ".join(f"{d}" for d in model["shape"])
    (work / "parity-gate.toml").write_text(
        f'baseline-dir = "baselines"\n'
        f'providers = [{{ name = "{cfg["provider"]}", precision = "{cfg["precision"]}", isolated = true }}]\n'
        f'[isolation]\ntimeout = 3000\n\n[[models]]\nname = "{model["name"]}"\nfactory = "bench_models:{model["factory"]}"\n'
        f'inputs = [{{ name = "x", shape = [{inputs}] }}]\n')


def run(argv: list[str], work: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=work, env={**os.environ, **env}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc


def measure(work: Path, model: dict, cfg: dict, device: str) -> dict:
    """update-baseline (TF32 off), then check (this configuration's TF32) and the recipe, timed."""
    py = sys.executable
    gate = [py, "-m", "gate.cli"]
    stats = work / "stats.jsonl"
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(work)]), "BENCH_STATS": str(stats),
           "PARITY_GATE_WORKER_HOOK": "bench_hook:install", "BENCH_TF32": "0", "PARITY_GATE_FULL": "1"}
    write_config(work, model, cfg)
    if cfg["tf32"] == "0" or not (work / "baselines" / f"{model['name']}.msgpack.zst").exists():
        run(gate + ["update-baseline"], work, env)  # TF32 off: the baseline a TF32 run is checked against
    stats.unlink(missing_ok=True)
    env["BENCH_TF32"] = cfg["tf32"]
    wall, _ = run(gate + ["check", "--json", "report.json"], work, env)
    report = json.loads((work / "report.json").read_text())
    worker = [json.loads(line) for line in stats.read_text().splitlines()][-1] if stats.exists() else {}
    rwall, proc = run([py, "recipe.py", model["factory"], json.dumps(model["shape"]), device, cfg["precision"]],
                      work, env)
    recipe = json.loads(proc.stdout.strip().splitlines()[-1])
    (pv,) = [p for p in report["models"][0]["providers"] if p["role"] == "runtime"] or [{}]
    hints = [h["message"] for h in report["models"][0].get("hints", []) if h["kind"] == "runtime-change"]
    return {**cfg, "model": model["name"], "check_wall_s": wall, "recipe_wall_s": rwall, "recipe": recipe,
            "worker": worker, "verdict": report["verdict"], "first_regression": report["first_regression"],
            "status": pv.get("status"), "errors": {r["layer"]: r.get("value") for r in pv.get("layers", [])},
            "hints": hints}


def _mib(b) -> str:
    return "n/a" if b is None else f"{b / 2**20:.0f}"


def print_results(rows: list[dict]) -> None:
    print("| model | provider | config | check s | recipe s | fingerprint share | fingerprints | "
          "peak MiB check | peak MiB recipe | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        w = r["worker"]
        share = w["fingerprint_s"] / w["run_s"] if w.get("run_s") else None
        print(f"| {r['model']} | {r['provider']} | {r['label']} | {r['check_wall_s']:.1f} | {r['recipe_wall_s']:.1f} | "
              f"{'n/a' if share is None else f'{100 * share:.0f}%'} | {w.get('fingerprints', 'n/a')} | "
              f"{_mib(w.get('max_memory_allocated'))} | {_mib(r['recipe'].get('max_memory_allocated'))} | "
              f"{r['verdict']} |")
    for r in rows:
        for h in r["hints"]:
            print(f"- {r['model']} {r['provider']} {r['label']}: {h}")


def print_layers(rows: list[dict], model: str, provider: str, limit: int = 40) -> None:
    mine = [r for r in rows if r["model"] == model and r["provider"] == provider]
    if not mine:
        return
    names = [n for n in mine[0]["errors"] if n.count(".") <= 1 and "#" not in n and "[" not in n][:limit]
    print(f"\n{model} on {provider}: relative error against the float64 reference, per layer\n")
    print("| layer | " + " | ".join(r["label"] for r in mine) + " |")
    print("|---|" + "---:|" * len(mine))
    for n in names:
        cells = [r["errors"].get(n) for r in mine]
        print(f"| {n} | " + " | ".join("-" if v is None else f"{v:.2e}" for v in cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--small", action="store_true", help="small models (a test of the script itself)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", action="append", default=[], metavar="LABEL",
                    help="run only these configurations (fp32, fp32+tf32, fp16, bf16; repeatable)")
    ap.add_argument("--provider", action="append", default=[], help="run only these providers (repeatable)")
    ap.add_argument("--model", action="append", default=[], help="run only these models (repeatable)")
    args = ap.parse_args()
    own_cache()  # never the user's store
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"bench_gpu_torch: no CUDA device here (torch {torch.__version__}); nothing measured")
        return 0
    if args.small:
        models = [{"name": "resnet18-small", "factory": "resnet18", "shape": [1, 3, 64, 64]},
                  {"name": "gpt-small", "factory": "gpt_small", "shape": [1, 32, 64]}]
    else:
        models = [{"name": "resnet50", "factory": "resnet50", "shape": [args.batch, 3, 224, 224]},
                  {"name": "gpt2-size", "factory": "gpt2_size", "shape": [1, 512, 768]}]
    if args.device == "cuda":
        print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-gpu-torch-") as tmp:
        work = Path(tmp)
        (work / "bench_models.py").write_text(MODELS)
        (work / "bench_hook.py").write_text(HOOK)
        (work / "recipe.py").write_text(RECIPE)
        for model in [m for m in models if not args.model or m["name"] in args.model]:
            for cfg in configs(args.device):
                if (args.only and cfg["label"] not in args.only) or (args.provider and cfg["provider"] not in args.provider):
                    continue
                rows.append(measure(work, model, cfg, args.device))
                print(f"measured {model['name']} {cfg['provider']} {cfg['label']}", file=sys.stderr)
    print_results(rows)
    for model in models:
        for provider in dict.fromkeys(r["provider"] for r in rows):
            print_layers(rows, model["name"], provider)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

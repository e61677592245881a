"""Benchmark: `parity-gate check` against the whole-output recipe, side by side, on resnet18.

    PYTHONPATH=. python scripts/bench_check.py [--model resnet18] [--pairs 3]
        [--polygraphy /tmp/venv-polygraphy/bin/polygraphy]

The recipe is what most teams run today: export + one torch run + one ONNX Runtime run +
np.allclose on the final output. Each side runs in its own fresh process (imports included) and
is measured alike (scripts/measure.py): wall time, and peak memory of the whole process tree (the
gate's process and its ONNX Runtime worker; the recipe has no worker). `update-baseline` runs first
(not timed). Then --pairs rounds, each timing one recipe and one check back to back (the first of a
round alternates); a ratio is the median of the rounds' ratios, with their range.

Sizes: the baseline file against every intermediate value of the same graph saved in full (each
ONNX value marked as an output, `np.savez`) and, with --polygraphy (a `polygraphy` executable in
an environment with onnx and onnxruntime: `python -m venv /tmp/venv-polygraphy &&
/tmp/venv-polygraphy/bin/pip install polygraphy onnx onnxruntime numpy`), against the golden
outputs Polygraphy writes with `run --onnxrt --onnx-outputs mark all --save-outputs`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from measure import Run, Spread, host, measured, own_cache, pairs, peak_said, stage_seconds

ROOT = Path(__file__).resolve().parents[1]

RECIPE = textwrap.dedent("""
    import sys, numpy as np, torch, torchvision, onnxruntime as ort
    torch.manual_seed(0)
    model = getattr(torchvision.models, sys.argv[1])(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        program = torch.onnx.export(model, (x,), dynamo=True)
        expected = model(x).numpy()
    sess = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    print("allclose", np.allclose(expected, got, rtol=1e-3, atol=1e-4))
""")

# The same export saved as model.onnx (what Polygraphy gets), and every value of it marked as an
# output and saved in full.
FULL_OUTPUTS = textwrap.dedent("""
    import sys, numpy as np, torch, torchvision, onnx, onnxruntime as ort
    torch.manual_seed(0)
    model = getattr(torchvision.models, sys.argv[1])(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    proto = torch.onnx.export(model, (x,), dynamo=True).model_proto
    onnx.save(proto, "model.onnx")
    np.save("input.npy", x.numpy())
    proto = onnx.shape_inference.infer_shapes(proto)
    have = {o.name for o in proto.graph.output}
    for vi in proto.graph.value_info:
        if vi.name not in have:
            proto.graph.output.append(vi)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    np.savez(sys.argv[2], **{f"v{i}": o for i, o in enumerate(outs)})
    print("values", len(outs))
""")

# Polygraphy's data loader reads its inputs from a script; the same tensor the other sides used.
POLY_INPUTS = "import numpy as np\ndef load_data():\n    yield {'x': np.load('input.npy')}\n"


def setup(work: Path, model: str) -> None:
    (work / "bench_models.py").write_text(f"import torchvision\n\ndef model():\n"
                                          f"    return torchvision.models.{model}(weights=None)\n")
    (work / "parity-gate.toml").write_text(textwrap.dedent(f"""
        baseline-dir = "baselines"
        providers = ["torch-cpu", "CPUExecutionProvider"]
        [[models]]
        name = "{model}"
        factory = "bench_models:model"
        inputs = [{{ name = "x", shape = [1, 3, 224, 224] }}]
    """))
    (work / "recipe.py").write_text(RECIPE)
    (work / "full.py").write_text(FULL_OUTPUTS)


def timed_pairs(work: Path, model: str, n: int) -> dict[str, list[Run]]:
    # absolute: both sides run in the temporary folder; the whole path (a matching content key costs
    # less: scripts/bench_reuse.py)
    py, env = sys.executable, {"PYTHONPATH": str(ROOT), "PARITY_GATE_FULL": "1"}
    argv = {"recipe": [py, "recipe.py", model], "check": [py, "-m", "gate.cli", "check", "--json", "report.json"]}
    measured([py, "-m", "gate.cli", "update-baseline"], work, env)
    runs: dict[str, list[Run]] = {"recipe": [], "check": []}
    for order in pairs(n, ("recipe", "check")):
        for side in order:
            run = measured(argv[side], work, env)
            if side == "recipe" and "allclose" not in run.proc.stdout:
                raise SystemExit(f"the recipe failed:\n{run.proc.stderr[-3000:]}")
            runs[side].append(run)
    return runs


def polygraphy(exe: str, work: Path) -> tuple[int, Run]:
    """Bytes of the golden outputs Polygraphy saves for every value of model.onnx, and its run."""
    (work / "poly_inputs.py").write_text(POLY_INPUTS)
    run = measured([exe, "run", "model.onnx", "--onnxrt", "--onnx-outputs", "mark", "all",
                    "--data-loader-script", "poly_inputs.py", "--save-outputs", "golden.json"], work, ok=(0,))
    return (work / "golden.json").stat().st_size, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--pairs", type=int, default=3, help="rounds of one recipe run and one check (>= 3 to publish)")
    ap.add_argument("--polygraphy", metavar="EXE", help="a polygraphy executable: also measure its golden outputs")
    args = ap.parse_args()
    own_cache()  # never the user's store
    print(host("torch", "torchvision", "onnx", "onnxruntime"), flush=True)
    from gate.fingerprint import backend

    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        work = Path(tmp)
        setup(work, args.model)
        runs = timed_pairs(work, args.model, args.pairs)
        report = json.loads((work / "report.json").read_text())
        full_run = measured([sys.executable, "full.py", args.model, str(work / "full.npz")], work, ok=(0,))
        full = (work / "full.npz").stat().st_size
        base = (work / "baselines" / f"{args.model}.msgpack.zst").stat().st_size
        poly = polygraphy(args.polygraphy, work) if args.polygraphy else None

    print(f"model {args.model}, batch 1, providers torch-cpu + CPUExecutionProvider, "
          f"{report['models'][0]['layers']} layers checked, verdict {report['verdict']}, fingerprint backend "
          f"{backend}; {args.pairs} rounds (recipe and check back to back, the first alternating); {peak_said()}")
    print(f"{'':22}{'wall s, median (range)':>26}{'peak MiB, median (range)':>28}")
    for side, label in (("recipe", "whole-output recipe"), ("check", "parity-gate check")):
        w, m = [r.wall_s for r in runs[side]], [r.peak_mib for r in runs[side]]
        print(f"{label:22}{statistics.median(w):>12.2f} ({min(w):.2f}-{max(w):.2f}){statistics.median(m):>14.0f} "
              f"({min(m):.0f}-{max(m):.0f})")
    wall = Spread.of([r.wall_s for r in runs["check"]], [r.wall_s for r in runs["recipe"]])
    peak = Spread.of([r.peak_bytes for r in runs["check"]], [r.peak_bytes for r in runs["recipe"]])
    print(f"check / recipe: wall {wall.fmt()}, peak {peak.fmt()}")
    stages = [{**s, "other": r.wall_s - sum(s.values())}
              for r, s in ((r, stage_seconds(r.proc.stderr)) for r in runs["check"])]
    print("check's stages (its progress lines; other = interpreter start, imports, reports), median s: "
          + ", ".join(f"{k} {statistics.median(s[k] for s in stages):.1f}" for k in stages[0]))
    print(f"baseline file {base / 1e3:.1f} kB; every ONNX value saved in full ({full_run.proc.stdout.split()[-1]} "
          f"values, np.savez) {full / 1e6:.1f} MB: {100 * base / full:.2f}%")
    if poly:
        size, run = poly
        print(f"Polygraphy golden outputs (run --onnxrt --onnx-outputs mark all --save-outputs) {size / 1e6:.1f} MB: "
              f"{100 * base / size:.2f}%; that run {run.wall_s:.1f} s, peak {run.peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()

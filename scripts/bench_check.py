"""Benchmark: `parity-gate check` against the whole-output recipe, side by side, on resnet18.

    .venv/bin/python scripts/bench_check.py [--model resnet18] [--repeat 3]

The recipe is what most teams run today: export + one torch run + one ONNX Runtime run +
np.allclose on the final output. Each side runs in its own fresh process (imports included),
wall time and peak RSS are taken from that process; medians over --repeat runs. Also
reports the baseline file size against the size of all per-layer outputs saved in full
(every intermediate value of the ONNX graph marked as an output, as Polygraphy's
`--onnx-outputs mark all --save-outputs` does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RECIPE = textwrap.dedent("""
    import io, sys, numpy as np, torch, torchvision, onnxruntime as ort
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

FULL_OUTPUTS = textwrap.dedent("""
    import sys, numpy as np, torch, torchvision, onnx, onnxruntime as ort
    torch.manual_seed(0)
    model = getattr(torchvision.models, sys.argv[1])(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    proto = torch.onnx.export(model, (x,), dynamo=True).model_proto
    proto = onnx.shape_inference.infer_shapes(proto)
    have = {o.name for o in proto.graph.output}
    for vi in proto.graph.value_info:
        if vi.name not in have:
            proto.graph.output.append(vi)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    np.savez(sys.argv[2], **{f"v{i}": o for i, o in enumerate(outs)})
""")

PEAK = "import atexit, resource, sys; atexit.register(lambda: sys.stderr.write(" \
       "f\"\\nPEAK_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n\"))"


def timed(argv: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK_KB")]
    return wall, int(peak[-1].split()[1]) / 1024 if peak else float("nan"), proc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_models.py").write_text(textwrap.dedent(f"""
            import torch, torchvision
            def model():
                return torchvision.models.{args.model}(weights=None)
        """))
        (work / "parity-gate.toml").write_text(textwrap.dedent(f"""
            baseline-dir = "baselines"
            providers = ["torch-cpu", "CPUExecutionProvider"]
            [[models]]
            name = "{args.model}"
            factory = "bench_models:model"
            inputs = [{{ name = "x", shape = [1, 3, 224, 224] }}]
        """))
        (work / "recipe.py").write_text(RECIPE)
        env = {"PYTHONPATH": str(ROOT)}
        gate = [py, "-c", PEAK + "; import sys; sys.argv[0]='parity-gate'; from gate.cli.app import main; main()"]
        timed(gate + ["update-baseline"], work, env)
        results: dict[str, list[tuple[float, float]]] = {"recipe": [], "check": []}
        for _ in range(args.repeat):
            w, m, _p = timed([py, "-c", PEAK + "; exec(open('recipe.py').read())", args.model], work)
            results["recipe"].append((w, m))
            w, m, proc = timed(gate + ["check", "--json", "report.json"], work, env)
            results["check"].append((w, m))
        report = json.loads((work / "report.json").read_text())
        (work / "full.py").write_text(FULL_OUTPUTS)
        timed([py, "full.py", args.model, str(work / "full.npz")], work)
        full = (work / "full.npz").stat().st_size
        base = (work / "baselines" / f"{args.model}.msgpack.zst").stat().st_size
        from gate.fingerprint import backend

    med = {k: (statistics.median(w for w, _ in v), statistics.median(m for _, m in v)) for k, v in results.items()}
    layers = report["models"][0]["layers"]
    print(f"model {args.model}, batch 1, providers torch-cpu + CPUExecutionProvider, {layers} layers checked, "
          f"verdict {report['verdict']}, fingerprint backend {backend}, median of {args.repeat}")
    print(f"{'':28}{'wall s':>10}{'peak MiB':>10}")
    for k, label in (("recipe", "whole-output recipe"), ("check", "parity-gate check")):
        print(f"{label:28}{med[k][0]:>10.2f}{med[k][1]:>10.0f}")
    print(f"{'ratio check/recipe':28}{med['check'][0] / med['recipe'][0]:>10.2f}{med['check'][1] / med['recipe'][1]:>10.2f}")
    print(f"baseline file {base / 1e3:.1f} kB; all per-layer outputs saved {full / 1e6:.1f} MB; "
          f"ratio {100 * base / full:.2f}%")


if __name__ == "__main__":
    main()

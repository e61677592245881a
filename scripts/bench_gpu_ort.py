"""Benchmark: the gate against the whole-output recipe on ONNX Runtime's GPU EPs.

    PYTHONPATH=. python scripts/bench_gpu_ort.py [--models resnet50,gpt2-small] [--json out.json]

On a machine whose ONNX Runtime has CUDAExecutionProvider (onnxruntime-gpu) and an NVIDIA GPU: for
resnet50 and a GPT-2-size transformer (random weights, nothing downloaded), run `check`'s pipeline
on CUDAExecutionProvider in float32, on the float16-transformed graph, and on
TensorrtExecutionProvider when it is available; print wall time, the per-layer relative L2 errors
against the float64 reference (worst, median, layers checked), the output's max-abs error and the
placement (nodes per EP). Then the whole-output recipe
(export, one torch run, one ONNX Runtime run, allclose) on the same EP, timed the same way.
Anywhere else it prints one line saying why nothing was measured and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from measure import own_cache

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = {
    "resnet50": ("examples.torchvision_zoo:resnet50", '[{ name = "x", shape = [1, 3, 224, 224] }]'),
    "gpt2-small": ("examples.transformers_zoo:gpt2_small",
                   '[{ name = "input_ids", shape = [1, 128], dtype = "int64", low = 0, high = 50257 }]'),
}
VARIANTS = {  # name -> (provider table, model keys)
    "cuda-float32": ('{ name = "CUDAExecutionProvider" }', ""),
    "cuda-float16": ('{ name = "CUDAExecutionProvider" }', 'transform = "examples.transforms:float16"'),
    "tensorrt-float32": ('{ name = "TensorrtExecutionProvider" }', ""),
}


def why_no_cuda() -> str | None:
    """None when CUDAExecutionProvider can run here, else the reason."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime is not installed"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        from gate.github import ortdist

        return (f"CUDAExecutionProvider is not available (ONNX Runtime distribution: {ortdist.imported() or 'none'}; "
                "install onnxruntime-gpu)")
    from gate.runners.gpu_probe import cuda_probe

    probe = cuda_probe(0)
    return probe.reason if probe.reason else None


def gate_row(tmp: Path, model: str, variant: str) -> dict:
    from gate.config import load_config
    from gate.pipeline.run import run_model

    factory, inputs = MODELS[model]
    provider, extra = VARIANTS[variant]
    path = tmp / f"{model}-{variant}.toml"
    path.write_text(f'baseline-dir = "b"\nproviders = [{provider}]\n[[models]]\nname = "{model}"\n'
                    f'factory = "{factory}"\ninputs = {inputs}\n{extra}\n')
    cfg = load_config(path)
    start = time.perf_counter()
    run = run_model(cfg, cfg.models[0], cfg.providers)
    wall = time.perf_counter() - start
    if run.error or not run.providers:
        return {"model": model, "variant": variant, "error": str(run.error)}
    (prun,) = run.providers
    errs = [pl.err for pl in prun.layers.values() if pl.err is not None]
    output = next((pl for name, pl in prun.layers.items() if name.startswith("(model)")), None)
    return {"model": model, "variant": variant, "status": prun.status, "reason": prun.reason,
            "device": prun.target.label, "wall_s": round(wall, 2), "layers": len(run.layers), "checked": len(errs),
            "worst_error": max(errs) if errs else None, "median_error": statistics.median(errs) if errs else None,
            "output_max_abs": output.exact["max_abs"] if output is not None and output.exact else None,
            "by_provider": (prun.placement or {}).get("by_provider"), "latency_ms": prun.latency_ms}


def recipe_row(model: str, provider: str) -> dict:
    """Export, one torch run (CPU, float32), one ONNX Runtime run on ``provider``, allclose."""
    import importlib

    import numpy as np
    import onnxruntime as ort
    import torch

    start = time.perf_counter()
    module, _, fn = MODELS[model][0].partition(":")
    torch.manual_seed(0)
    net = getattr(importlib.import_module(module), fn)().eval()
    x = torch.randn(1, 3, 224, 224) if model == "resnet50" else torch.randint(0, 50257, (1, 128))
    with torch.no_grad():
        proto = torch.onnx.export(net, (x,), dynamo=True).model_proto
        expected = net(x)
        expected = (expected if isinstance(expected, torch.Tensor) else expected[0]).numpy()
    sess = ort.InferenceSession(proto.SerializeToString(), providers=[provider])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    ok = bool(np.allclose(expected, got, rtol=1e-3, atol=1e-4))
    return {"model": model, "variant": f"recipe-{provider}", "wall_s": round(time.perf_counter() - start, 2),
            "allclose": ok, "output_max_abs": float(np.max(np.abs(expected - got)))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    own_cache()  # never the user's store
    reason = why_no_cuda()
    if reason:
        print(f"bench_gpu_ort: no CUDA here ({reason}); nothing measured")
        return
    import onnxruntime as ort

    variants = [v for v in VARIANTS if not v.startswith("tensorrt") or
                "TensorrtExecutionProvider" in ort.get_available_providers()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for variant in variants:
                rows.append(gate_row(Path(tmp), model, variant))
                print(json.dumps(rows[-1]), flush=True)
            rows.append(recipe_row(model, "CUDAExecutionProvider"))
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()

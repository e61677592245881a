"""The export-validator's multi-architecture table, measured with parity-gate.

Full-size torchvision models, random init (seeded), batch 1, 224x224, float32 export (dynamo),
CPUExecutionProvider and torch-cpu float32 compared with the float64 PyTorch reference, every
module call a layer. No baseline is involved: the numbers are each runtime's per-layer relative
L2 error against the float64 reference (estimated from the 256-bucket CountSketch, +-4.4%).

Columns
- layers: module calls in the reference (leaves, containers, the root).
- checked: layers the provider has a value for (the rest are folded into a fused node or absent,
  e.g. Conv folded into BatchNorm, Dropout/Identity with no node).
- > ceiling: layers whose error is over the default ceiling (1e-2): the check that fails without
  a baseline. > floor: layers over the default floor (1e-6), the slack the growth check allows
  on top of the baseline error: how many layers are noisier than that in absolute terms.
- worst: the largest per-layer error and where.

Usage: PYTHONPATH=. python scripts/bench_torchvision_table.py [--models resnet18,resnet50,mobilenet_v3_small,vit_b_16]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from measure import own_cache

MODELS = ("resnet18", "resnet50", "mobilenet_v3_small", "vit_b_16")
CEILING, FLOOR = 1e-2, 1e-6


def factory_module() -> str:
    # vit_b_16: torchvision initializes the head to zeros (output all zeros, which the gate refuses as
    # degenerate); it gets random weights like every other layer.
    return "\n".join(f"def {m}():\n    import torch\n    import torchvision.models as tvm\n    m = tvm.{m}()\n"
                     f"    if hasattr(m, 'heads'):\n        with torch.no_grad():\n"
                     f"            m.heads.head.weight.normal_(0, m.heads.head.in_features ** -0.5)\n"
                     f"    return m\n" for m in MODELS)


def measure(folder: Path, model: str) -> dict:
    from gate import commands
    from gate.config import load_config

    cfg_path = folder / "parity-gate.toml"
    cfg_path.write_text(f'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
                        f'[[models]]\nname = "{model.replace("_", "-")}"\nfactory = "tvfactories:{model}"\n'
                        f'inputs = [{{ name = "x", shape = [1, 3, 224, 224], dtype = "float32" }}]\n')
    cfg = load_config(cfg_path)
    t0 = time.perf_counter()
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    seconds = time.perf_counter() - t0
    m = report["models"][0]
    out = {"model": model, "layers": m["layers"], "seconds": seconds, "status": m["status"], "error": m["error"]}
    for p in m["providers"]:
        if p["role"] != "runtime":
            continue
        rows = [r for r in p["layers"] if r["check"] == "error-growth" or r["check"] == "ceiling"]
        vals = [(r["value"], r["layer"]) for r in rows if r["value"] is not None]
        worst = max(vals, key=lambda v: v[0]) if vals else (None, None)  # ties: the first in execution order
        out[p["name"]] = {"status": p["status"], "checked": len(vals), "folded": p["folded"],
                          "absent": sum(r["status"] == "absent" for r in p["layers"]),
                          "over_ceiling": sum(v > CEILING for v, _ in vals), "over_floor": sum(v > FLOOR for v, _ in vals),
                          "worst": worst[0], "worst_layer": worst[1], "latency_ms": p.get("latency_ms"),
                          "output": next((r["value"] for r in p["layers"] if r["layer"] == "(model)"), None)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    own_cache()  # never the user's store
    import onnxruntime
    import torch
    import torchvision

    from gate import fingerprint

    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                "onnxruntime": onnxruntime.__version__, "backend": fingerprint.backend,
                "threads": torch.get_num_threads()}
    print("versions:", json.dumps(versions), flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="pg-table-") as tmp:
        folder = Path(tmp)
        (folder / "tvfactories.py").write_text(factory_module())
        for model in [m for m in args.models.split(",") if m]:
            r = measure(folder, model)
            results.append(r)
            print(json.dumps(r), flush=True)
    print()
    print("| model | layers | provider | checked | folded/absent | > 1e-2 (ceiling) | > 1e-6 (floor) | worst rel. L2 | "
          "where | output rel. L2 | check s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        for prov in ("CPUExecutionProvider", "torch-cpu"):
            p = r.get(prov)
            if p is None:
                print(f"| {r['model']} | {r['layers']} | {prov} | {r['status']}: {r['error']} | | | | | | | |")
                continue
            print(f"| {r['model']} | {r['layers']} | {prov} float32 | {p['checked']} | {p['folded']}/{p['absent']} | "
                  f"{p['over_ceiling']} | {p['over_floor']} | {p['worst']:.2e} | {p['worst_layer']} | "
                  f"{p['output']:.2e} | {r['seconds']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"versions": versions, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

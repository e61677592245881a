"""Fault-injection benchmark: does parity-gate catch real faults in real architectures, name the
first module each one changes, stay quiet on behaviour-preserving refactors, and explain what it found?

Models are public definitions with random weights (nothing is downloaded; ``faultbench/models.py``):
torchvision resnet18, mobilenet_v3_small, efficientnet_b0 and a small VisionTransformer, and Hugging
Face BERT (with a padding mask), GPT-2 and a Llama-style decoder with small configs (skipped, and
said so, when transformers is not installed). For each model a baseline is written from the
unchanged factory, then ``gate.commands.check`` runs (in-process, real export, real ONNX Runtime
CPUExecutionProvider in its worker) once per fault and once per benign change:

- faults in the PyTorch model (``faultbench/faults.py``): weights scaled by 1e-3 and 1e-6, a swapped
  activation, a norm's eps, a transposed output, reflect padding, a float16 round trip, a Dropout
  or BatchNorm left in training mode, an attention scale;
- faults only the exported graph or the runtime sees (``faultbench/graph_faults.py``): a float16
  round trip inserted in the ONNX graph and a node dropped by a ``transform``, and an EP option
  (OpenVINO's bfloat16 precision hint; through export -> collect -> report, when the
  onnxruntime-openvino environment exists: ``.venv-openvino`` or ``PARITY_GATE_OPENVINO_PYTHON``);
- faults made through what no key sees (``faultbench/unseen.py``): one deep weight of the shipped
  graph rounded to float16 through the transform's data file, through an environment variable it
  reads, and in a rebuilt prebuilt ``artifact``. Graph-side faults are checked twice, on the default
  path (each stage from its key where the store has it) and with ``--full``, and their truth is found
  by value (``faultbench/graph_truth.py``: the module whose weight an initializer is, or whose output
  a node computes), never from the exporter's metadata the gate reads;
- behaviour-preserving changes (``faultbench/refactors.py``): renames, regrouping, split modules,
  functional calls, removed Dropouts, unused modules/buffers/parameters, hooks, channels-last,
  a checkpoint round trip, eager -> SDPA attention; and the unchanged model re-checked, with one
  thread, and against baselines recorded in another process (with the default and with one thread).

Scoring is strict (``faultbench/scoring.py``): localization and hints count only at the first
module the fault changes, found independently of the gate (``faultbench/truth.py``).

Usage:
    python scripts/bench_faults.py [--models resnet18,vit] [--kinds weight_1e3,rename_head,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from faultbench import refactors, runs, unseen  # noqa: E402
from faultbench.factories import BENIGN, _factory  # noqa: E402
from faultbench.faults import MODEL_FAULTS  # noqa: E402
from faultbench.graph_faults import graph_faults, output_node  # noqa: E402
from faultbench.models import ARCHS  # noqa: E402
from faultbench.runs import OV, Case  # noqa: E402
from faultbench.scoring import WHOLE_GRAPH, score_benign, score_fault, summarize  # noqa: E402
from faultbench.truth import first_changed  # noqa: E402
from measure import own_cache  # noqa: E402


def _row(kind: str, group: str, fn, log) -> dict:
    t0 = time.perf_counter()
    try:
        row = dict(kind=kind, group=group, **fn())
    except Exception as exc:  # noqa: BLE001 - a benchmark row, not a crash
        row = dict(kind=kind, group=group, error=f"{type(exc).__name__}: {exc}", crashed=True)
    row.setdefault("seconds", time.perf_counter() - t0)  # a row checked twice keeps each check's time
    log(_line(row))
    return row


def _fault_rows(folder: Path, model: str, wanted, log) -> list[dict]:
    arch, rows = ARCHS[model], []
    base = Case(model, "base", arch.inputs)
    for kind, fault in MODEL_FAULTS[model].items():
        if wanted(kind):
            case = Case(model, kind, arch.inputs)
            rows.append(_row(kind, "model", lambda case=case, fault=fault: score_fault(
                runs.check(folder, case)[0], fault.layer, first_changed(base.config(folder), case.config(folder)),
                fault.hint), log))
    for kind, fault in graph_faults(model).items():
        if not wanted(kind):
            continue
        if fault.side == "graph":
            rows.append(_row(kind, "graph", lambda kind=kind, fault=fault: _graph(folder, model, kind, fault), log))
        elif runs.openvino_python():
            rows.append(_row(kind, "runtime", lambda fault=fault, kind=kind: _runtime(folder, model, kind, fault), log))
        else:
            log(f"  {kind:26s} skipped: no onnxruntime-openvino environment")
    return rows


def _graph(folder: Path, model: str, kind: str, fault) -> dict:
    """A fault in the exported graph: its truth the first module whose output it changes, found by value
    (never from the exporter's metadata the gate reads); checked on the default path and with --full."""
    value, truth = unseen.node_truth(folder, model, lambda proto: output_node(proto, fault.layer),
                                     lambda proto: fault.apply(proto, fault.layer))
    case = Case(model, "base", ARCHS[model].inputs, transform=f"graph__{model}__{kind}", tag=kind)
    out = unseen.row(kind, "graph", *unseen.twice(folder, case), value, truth, fault.hint)
    return {k: v for k, v in out.items() if k not in ("kind", "group")}


def _runtime(folder: Path, model: str, kind: str, fault) -> dict:
    inputs, export = ARCHS[model].inputs, folder / f"ovexport-{model}"
    runs.matrix(folder, Case(model, "base", inputs, baselines="baselines-ov", ov_options={}, tag="ovbase"), export, True)
    case = Case(model, "base", inputs, baselines="baselines-ov", ov_options=dict(fault.session), tag=kind)
    report, _ = runs.matrix(folder, case, export, False)
    return score_fault(report, WHOLE_GRAPH, WHOLE_GRAPH, fault.hint, provider=OV)


def _benign_rows(folder: Path, model: str, wanted, log) -> list[dict]:
    arch, rows = ARCHS[model], []
    base = Case(model, "base", arch.inputs)
    for kind in refactors.RUNS:
        if wanted(kind):
            rows.append(_row(kind, "benign", lambda kind=kind: _run_kind(folder, base, kind), log))
    for kind in (*BENIGN, *refactors.BUILT):
        if not wanted(kind):
            continue
        try:
            _factory(model, kind)()
        except refactors.NotApplicable:
            rows.append(dict(kind=kind, group="benign", applicable=False))
            continue
        case = Case(model, kind, arch.inputs)
        rows.append(_row(kind, "benign", lambda case=case: score_benign(runs.check(folder, case)[0]), log))
    return rows


ELSEWHERE = {"baseline_other_process": ("baselines-proc", None), "baseline_other_threads": ("baselines-t1", 1)}


def _run_kind(folder: Path, base: Case, kind: str) -> dict:
    """The unchanged model, re-checked here, with one thread, or against a baseline another process wrote:
    with --full, so the float64 reference is computed again and compared (reused, it would be the
    baseline's own, and the check a pass by construction)."""
    if kind in ELSEWHERE:
        where, threads = ELSEWHERE[kind]
        recorded = Case(base.model, "base", base.inputs, baselines=where, tag=kind)
        runs.record(folder, recorded, other_process=True, threads=threads)
        return score_benign(runs.check(folder, recorded, full=True)[0])
    return score_benign(runs.check(folder, base, threads=1 if kind == "threads_1" else None, full=True)[0])


def bench_model(folder: Path, model: str, kinds: list[str] | None, log) -> dict:
    def wanted(kind: str) -> bool:
        return not kinds or kind in kinds

    base_s = runs.record(folder, Case(model, "base", ARCHS[model].inputs))
    rows = (_fault_rows(folder, model, wanted, log) + unseen.unseen_rows(folder, model, wanted, log)
            + _benign_rows(folder, model, wanted, log))
    return dict(summary=summarize(model, rows, base_s), rows=rows)


def _g(v) -> str:
    return "" if v is None else (f"{v:.3g}" if isinstance(v, float) and math.isfinite(v) else str(v))


def _line(r: dict) -> str:
    if r.get("crashed"):
        return f"  {r['kind']:26s} ERROR {r['error']}"
    if r["group"] == "benign":
        note = "; ".join(r.get("structure", []))[:160]
        return (f"  {r['kind']:26s} {r['verdict']:9s} (benign) {r.get('first_layer') or ''} {r.get('check') or ''} "
                f"{_g(r.get('value'))} {note} {r['seconds']:.1f}s")
    return (f"  {r['kind']:26s} {r['verdict']:9s} first={r['first_layer']} ({r['first_provider']}, {r['check']} "
            f"{_g(r['value'])}) truth={r['truth']} localized={r['localized']} hint={r['hint_ok']} {r['seconds']:.1f}s")


def _versions() -> dict:
    import onnxruntime
    import torch
    import torchvision

    from gate import fingerprint
    from gate.core.device import cpu_name

    out = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnxruntime": onnxruntime.__version__,
           "backend": fingerprint.backend, "cpu": cpu_name(), "python": platform.python_version()}
    if importlib.util.find_spec("transformers"):
        import transformers

        out["transformers"] = transformers.__version__
    return out


def main(argv: list[str] | None = None) -> int:
    from faultbench import tables

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ARCHS))
    ap.add_argument("--kinds", default="")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    own_cache()  # never the user's store
    versions = _versions()
    print("versions:", json.dumps(versions), flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="pg-bench-") as tmp:
        for model in [m for m in args.models.split(",") if m]:
            needs = ARCHS[model].needs
            if needs and not importlib.util.find_spec(needs):
                print(f"{model}: skipped ({needs} is not installed)", flush=True)
                continue
            print(f"{model}:", flush=True)
            results.append(bench_model(Path(tmp), model, [k for k in args.kinds.split(",") if k] or None,
                                       lambda s: print(s, flush=True)))
    for table in (tables.summary, tables.faults, tables.both_paths, tables.benign):
        print()
        print("\n".join(table(results)))
    if args.json:
        args.json.write_text(json.dumps(dict(versions=versions, results=results), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run one configured model: build it once, export it, fingerprint every layer on the float64
reference and on each selected provider. Returns a ``ModelRun``; judging it is ``compare``'s job.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from importlib import metadata

import numpy as np

import gate
from gate import device
from gate.config import Config, ModelSpec, ProviderSpec
from gate.errors import ConfigError, ModelError
from gate.fingerprint import QUANTILES, SKETCH_WIDTH, relative_error
from gate.runs import LayerInfo, ModelRun, ProviderLayer, ProviderRun

Progress = Callable[[str], None]


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"parity_gate": gate.__version__}
    for dist, key in (("torch", "torch"), ("onnx", "onnx"), ("onnxscript", "onnxscript")):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    out["onnxruntime"] = None
    for dist in ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino"):
        try:
            out["onnxruntime"] = metadata.version(dist)
            break
        except metadata.PackageNotFoundError:
            continue
    return out


def fingerprint_meta() -> dict:
    from gate import fingerprint as fp_mod

    return {"sketch_width": SKETCH_WIDTH, "sketch_seed": int(getattr(fp_mod, "SKETCH_SEED", 0)),
            "quantiles": [float(q) for q in QUANTILES]}


def run_model(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...],
              progress: Progress = lambda _: None) -> ModelRun:
    """Everything for one model; a failure becomes ``run.error`` with its status."""
    from gate import model as model_mod  # torch lives behind this import

    run = ModelRun(spec.name)
    threads = thread_count()
    if threads:
        import torch

        torch.set_num_threads(threads)
    progress(f"{spec.name}: building")
    built = model_mod.build(spec, config.root)  # ConfigError propagates: the config is wrong
    run.meta = {**versions(), "exporter": None, "export_fallback": None, "opset": None,
                "inputs_digest": built.inputs_digest, "weights_digest": built.weights_digest,
                "graph_digest": "", "machine": device.machine(), "fingerprint": fingerprint_meta()}

    progress(f"{spec.name}: exporting to ONNX")
    exported = None
    try:
        from gate.export.exporter import export

        exported = export(built)
        run.meta.update(exporter=exported.exporter, export_fallback=exported.fallback, opset=exported.opset,
                        graph_digest=hashlib.sha256(exported.proto.SerializeToString()).hexdigest())
    except ModelError as exc:
        run.error = {"status": exc.status, "message": str(exc)}

    progress(f"{spec.name}: float64 reference on torch-cpu")
    from gate.capture import torch_capture

    try:
        ref_module, ref_inputs = torch_capture.as_float64(built.module, built.inputs)
        records = torch_capture.run(ref_module, ref_inputs)
        del ref_module
    except Exception as exc:  # noqa: BLE001 - a model without float64 kernels falls back
        progress(f"{spec.name}: float64 reference failed ({type(exc).__name__}); using float32")
        run.reference["dtype"] = "float32"
        try:
            records = torch_capture.run(built.module, built.inputs)
        except Exception as exc2:
            run.error = {"status": "INFER_FAIL", "message": f"model `{spec.name}`: PyTorch forward failed: "
                         f"{type(exc2).__name__}: {exc2}"}
            return run
    run.layers = [LayerInfo(r.name, r.type, r.fp) for r in records]
    ref_by_name = {r.name: r.fp for r in records}

    for provider in providers:
        progress(f"{spec.name}: {provider.name}")
        prun = ProviderRun(provider.name, "float32", device.device_class(provider.name))
        run.providers.append(prun)
        if provider.name == "torch-cpu":
            f32 = torch_capture.run(built.module, built.inputs)
            for r in f32:
                prun.layers[r.name] = ProviderLayer("ok", r.fp, _err(r.fp, ref_by_name.get(r.name)))
        elif provider.name == "torch-cuda":
            prun.status, prun.reason = "skipped", "skipped: torch-cuda not available here"
            import torch

            if torch.cuda.is_available():
                prun.status, prun.reason = "ok", None
                prun.device = f"cuda-{torch.cuda.get_device_name().replace(' ', '_')}"
                module, inputs = built.module.cuda(), tuple(t.cuda() for t in built.inputs)
                try:
                    for r in torch_capture.run(module, inputs):
                        prun.layers[r.name] = ProviderLayer("ok", r.fp, _err(r.fp, ref_by_name.get(r.name)))
                finally:
                    built.module.cpu()
        else:
            _run_ort(spec, provider, prun, exported, records, built.inputs, ref_by_name)
    return run


def thread_count() -> int | None:
    """PARITY_GATE_THREADS pins torch's and ONNX Runtime's intra-op threads (default: theirs)."""
    raw = os.environ.get("PARITY_GATE_THREADS", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"PARITY_GATE_THREADS={raw!r}: expected a positive integer")
    return int(raw)


def _err(fp, ref) -> float | None:
    if ref is None or tuple(fp.shape) != tuple(ref.shape):
        return None
    return relative_error(fp, ref)


def _run_ort(spec, provider, prun, exported, records, inputs, ref_by_name) -> None:
    from gate.capture import ort_capture
    from gate.export.layermap import assign

    if provider.name not in ort_capture.available_providers():
        prun.status, prun.reason = "skipped", f"skipped: {provider.name} not available here"
        return
    if exported is None:
        prun.status, prun.error_status, prun.reason = "error", "EXPORT_FAIL", "no ONNX model (export failed)"
        return
    assignment = assign(records, exported.calls, exported.shapes, exported.available)
    values = [a.ref for a in assignment.values() if a.kind == "value"]
    arrays = [_numpy_input(t) for t in inputs]
    try:
        result = ort_capture.run(exported.proto, provider.name, provider.options, arrays, values,
                                 what=f"model `{spec.name}`", threads=thread_count())
    except ModelError as exc:
        prun.status, prun.reason = "error", str(exc)
        prun.error_status = exc.status
        return
    prun.latency_ms = result.latency_ms
    for rec in records:
        a = assignment.get(rec.name)
        if a is None or a.kind in ("folded", "absent"):
            prun.layers[rec.name] = ProviderLayer(a.kind if a else "absent", reason=a.reason if a else None)
            continue
        fp = result.outputs[a.ref] if a.kind == "output" and a.ref < len(result.outputs) else result.values.get(a.ref)
        if fp is None:
            prun.layers[rec.name] = ProviderLayer("absent", reason="value not returned")
            continue
        prun.layers[rec.name] = ProviderLayer("ok", fp, _err(fp, ref_by_name[rec.name]))


def _numpy_input(t) -> np.ndarray:
    import torch

    t = t.detach().cpu()
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()

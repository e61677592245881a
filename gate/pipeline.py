"""Run one configured model: build it once, export it, fingerprint every layer on the float64
reference and on each selected provider. Returns a ``ModelRun``; judging it is ``compare``'s job.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

import gate
from gate import device
from gate.collect import write_bundle
from gate.config import TORCH_PROVIDERS, Config, Isolation, ModelSpec, ProviderSpec
from gate.errors import ConfigError, ModelError
from gate.fingerprint import QUANTILES, SKETCH_WIDTH
from gate.runs import LayerInfo, ModelRun, ProviderLayer, ProviderRun, error_against

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


@dataclass
class Prepared:
    """A model built, exported and run on the reference and the torch providers."""

    run: ModelRun
    proto_bytes: bytes | None  # the shipped ONNX graph; None when the export failed
    inputs: list[np.ndarray]


def prepare(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...],
            progress: Progress = lambda _: None) -> Prepared:
    """Build once, export, fingerprint the float64 reference and the torch providers.

    ONNX Runtime providers in ``providers`` are left for ``gate.collect``; a failure of the
    model becomes ``run.error`` with its status.
    """
    from gate import model as model_mod  # torch lives behind this import

    run = ModelRun(spec.name)
    threads = thread_count()
    if threads:
        import torch

        torch.set_num_threads(threads)
    progress(f"{spec.name}: building")
    built = model_mod.build(spec, config.root)  # ConfigError propagates: the config is wrong
    if not any(True for _ in built.module.children()) and not any(True for _ in built.module.parameters()) \
            and not any(True for _ in built.module.buffers()):
        run.error = {"status": "EMPTY", "message": f"model `{spec.name}` has no modules, parameters or buffers: "
                     "nothing to check"}
    run.meta = {**versions(), "exporter": None, "export_fallback": None, "opset": None,
                "inputs_digest": built.inputs_digest, "weights_digest": built.weights_digest,
                "graph_digest": "", "machine": device.machine(), "fingerprint": fingerprint_meta()}
    inputs = [_numpy_input(t) for t in built.inputs]
    if run.error:
        return Prepared(run, None, inputs)

    progress(f"{spec.name}: exporting to ONNX")
    exported = None
    try:
        from gate.export.exporter import export

        exported = export(built)
    except ModelError as exc:
        run.error = {"status": exc.status, "message": str(exc)}
    proto_bytes = None
    if exported is not None:
        proto_bytes = exported.proto.SerializeToString()
        run.meta.update(exporter=exported.exporter, export_fallback=exported.fallback, opset=exported.opset,
                        graph_digest=graph_digest(exported.proto),
                        op_types=sorted({n.op_type for n in exported.proto.graph.node}))

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
            return Prepared(run, None, inputs)
    run.layers = [LayerInfo(r.name, r.type, r.fp) for r in records]
    ref_by_name = {r.name: r.fp for r in records}
    if exported is not None:
        from gate.export.layermap import assign

        mapping = assign(records, exported.calls, exported.shapes, exported.available)
        run.onnx_map = {name: (a.kind, a.ref, a.reason) for name, a in mapping.items()}

    for provider in providers:
        if provider.name in TORCH_PROVIDERS:
            progress(f"{spec.name}: {provider.name} {provider.precision}")
            run.providers.append(_torch_provider(built, provider, torch_capture, ref_by_name))
    return Prepared(run, proto_bytes, inputs)


def _torch_provider(built, provider: ProviderSpec, torch_capture, ref_by_name) -> ProviderRun:
    """PyTorch eager (every module call hooked) or torch.compile (inductor; only the model's
    outputs are observable: hooks inside a compiled graph would break it into pieces and
    test something else), on CPU or CUDA, in the provider's precision."""
    import copy

    import torch

    on_cuda = provider.name.endswith("cuda")
    prun = ProviderRun(provider.name, provider.precision, device.device_class(provider.name))
    if on_cuda and not torch.cuda.is_available():
        prun.status, prun.reason = "skipped", f"skipped: {provider.name} not available here (no CUDA device)"
        return prun
    if on_cuda:
        prun.device = device.cuda_class(torch.cuda.get_device_name(), torch.cuda.get_device_capability())
    dtype = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}[provider.precision]
    module = built.module
    if dtype is not None or on_cuda:
        module = copy.deepcopy(built.module)
        module = module.to(device="cuda" if on_cuda else "cpu", dtype=dtype) if dtype else module.cuda()
    inputs = tuple(t.to(device="cuda" if on_cuda else "cpu",
                        dtype=dtype if dtype is not None and t.is_floating_point() else t.dtype)
                   for t in built.inputs)
    if prun.precision != "float32":
        prun.device = f"{prun.device}:{prun.precision}"  # baseline entries are per device and precision
    try:
        if provider.name.startswith("torch-compile"):
            records = _compiled_outputs(module, inputs, provider, torch_capture)
        else:
            records = torch_capture.run(module, inputs)
    except Exception as exc:  # noqa: BLE001 - a provider that cannot run is a status, not a crash
        prun.status, prun.error_status = "error", "INFER_FAIL"
        prun.reason = f"{provider.name} ({provider.precision}) failed: {type(exc).__name__}: {str(exc)[:300]}"
        return prun
    for r in records:
        prun.layers[r.name] = ProviderLayer("ok", r.fp, error_against(r.fp, ref_by_name.get(r.name)))
    for name in ref_by_name:
        prun.layers.setdefault(name, ProviderLayer("absent", reason="inside the compiled graph"))
    return prun


def _compiled_outputs(module, inputs, provider: ProviderSpec, torch_capture):
    import torch

    from gate.capture.records import LayerOutput, layer_name
    from gate.fingerprint import fingerprint
    from gate.model import inference_mode

    compiled = torch.compile(module, backend="inductor", **dict(provider.options))
    with inference_mode():
        output = compiled(*inputs)
    return [LayerOutput(layer_name("", 0, element), "", 0, element, type(module).__name__,
                        fingerprint(torch_capture.to_numpy(t)))
            for element, t in torch_capture.flatten(output)]


def run_ort_providers(prepared: Prepared, bundle: Path, providers: tuple[ProviderSpec, ...],
                      isolation: Isolation, progress: Progress = lambda _: None) -> None:
    """Run the ONNX Runtime providers on a written bundle, appending to ``prepared.run``."""
    from gate.capture.ort_capture import available_providers
    from gate.collect import run_provider

    run = prepared.run
    here = available_providers()
    for provider in providers:
        if provider.name in TORCH_PROVIDERS:
            continue
        progress(f"{run.name}: {provider.name}")
        if provider.name not in here:
            run.providers.append(ProviderRun(provider.name, "float32", device.device_class(provider.name),
                                             "skipped", f"skipped: {provider.name} not available here"))
        elif prepared.proto_bytes is None and not (bundle / "model.onnx").is_file():
            run.providers.append(ProviderRun(provider.name, "float32", device.device_class(provider.name), "error",
                                             "no ONNX model (export failed)", "EXPORT_FAIL"))
        else:
            run.providers.append(run_provider(bundle, run, provider, device.device_class(provider.name),
                                              isolation, thread_count()))


def run_model(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...],
              progress: Progress = lambda _: None, isolation: Isolation | None = None) -> ModelRun:
    """Everything for one model, ONNX Runtime providers in worker processes."""
    prepared = prepare(config, spec, providers, progress)
    if prepared.run.error and prepared.proto_bytes is None and not prepared.run.layers:
        return prepared.run
    with tempfile.TemporaryDirectory(prefix="parity-gate-") as tmp:
        bundle = Path(tmp)
        if prepared.proto_bytes is not None:
            write_bundle(bundle, prepared.proto_bytes, prepared.inputs)
        run_ort_providers(prepared, bundle, providers, isolation or config.isolation, progress)
    return prepared.run


def graph_digest(proto) -> str:
    """sha256 of the graph without node metadata and doc strings: the exporter's stack traces
    name source files, which differ between checkouts of the same code."""
    import onnx

    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    bare.doc_string = ""
    del bare.metadata_props[:]
    bare.graph.doc_string = ""
    for node in bare.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    return hashlib.sha256(bare.SerializeToString(deterministic=True)).hexdigest()


def thread_count() -> int | None:
    """PARITY_GATE_THREADS pins torch's and ONNX Runtime's intra-op threads (default: theirs)."""
    raw = os.environ.get("PARITY_GATE_THREADS", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"PARITY_GATE_THREADS={raw!r}: expected a positive integer")
    return int(raw)


def _numpy_input(t) -> np.ndarray:
    import torch

    t = t.detach().cpu()
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()

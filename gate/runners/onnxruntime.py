"""An ONNX Runtime execution provider as a runner (no torch here).

It runs the bundle's ``model.onnx`` (``ort_session``) and maps the ONNX values' fingerprints back to
layers through the run's ``onnx_map``; where several same-shaped values could be a layer's, their
fingerprints pick it (``layermap.pick``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gate.config.providers import CPU_EPS, GPU_EPS
from gate.core import device
from gate.core.failure import ModelError
from gate.core.layers import FORWARD_ONLY, is_gradient
from gate.core.progress import DETAIL, DETAIL_EVERY_S
from gate.core.runs import LayerInfo, ModelRun, OnnxSite, ProviderLayer, ProviderRun
from gate.core.status import ErrorStatus, LayerStatus, SiteKind
from gate.core.target import Target
from gate.export.layermap import available_values, pick
from gate.formats.results import Bundle
from gate.runners import gpu_probe, ort_session
from gate.runners.base import Runner, Subject, Unavailable
from gate.runners.ort_capture import device_id
from gate.verdict import against_reference


def marked(site: OnnxSite) -> tuple[str, ...]:
    """The values a layer's site has the capture fingerprint: its value, or its candidates."""
    if site.kind == "value" and site.value is not None:
        return (site.value,)
    return site.candidates if site.kind == "absent" else ()


def value_bytes(run: ModelRun) -> dict[str, int]:
    """Bytes each marked value will occupy (float32)."""
    counts = {x.name: x.fp.count for x in run.layers}
    out: dict[str, int] = {}
    for layer, site in run.onnx_map.items():
        for value in marked(site):
            out[value] = max(out.get(value, 0), 4 * counts.get(layer, 0))
    return out


class OrtRunner(Runner):
    def probe(self) -> gpu_probe.Probe:
        if self.name in CPU_EPS:
            return gpu_probe.Probe(device.cpu_class())
        if self.name in GPU_EPS and GPU_EPS[self.name].cuda:
            return gpu_probe.cuda_probe(device_id(self.spec.options))
        return gpu_probe.Probe(device.GPU, f"{self.name} does not report its device")

    def target(self) -> Target:
        return Target(self.name, self.probe().device_class, self.spec.precision)

    def precheck(self, subject: Subject) -> None:
        if self.name not in ort_session.available_providers():
            raise Unavailable(f"skipped: {self.name} not available here")
        if subject.run.unexported:  # the exporter's own reason, on every row it leaves unchecked
            raise ModelError(f"not run: {subject.run.error.message}", ErrorStatus.EXPORT_FAIL)
        if subject.bundle is None or not Bundle(subject.bundle).has_model:
            error = subject.run.error  # the model failed before its export (its factory): said as it failed
            raise ModelError(f"not run: {error.message}" if error else "no ONNX model (export failed)",
                             error.error_status if error else ErrorStatus.EXPORT_FAIL)

    def run(self) -> ProviderRun:
        run = self.subject.run
        what = f"model `{run.name}`"
        bundle = Bundle(self.subject.bundle)
        try:
            from gate.export.saved import load_graph

            proto = load_graph(bundle.model)  # without its weights: the marked copies share their file
            inputs = bundle.inputs()
        except Exception as exc:  # a truncated or foreign file: the provider cannot load it
            raise ModelError(f"{what}: cannot read the exported model or inputs "
                             f"({type(exc).__name__}: {str(exc)[:200]})", ErrorStatus.LOAD_FAIL) from None
        present = available_values(proto)  # candidates the shipped graph lost (optimizer, transform) are not
        values = list(dict.fromkeys(v for s in run.onnx_map.values() for v in marked(s) if v in present))
        session = ort_session.SessionSpec(self.name, dict(self.spec.options), dict(self.spec.session_options),
                                          self.subject.threads)
        result = ort_session.run(proto, session, inputs, values, what, timing_runs=self.subject.timing_runs,
                                 capture_bytes=self.subject.capture_bytes, value_bytes=value_bytes(run),
                                 keep_outputs=bool(self.subject.outputs),
                                 model=bundle.model, detail=_detail(run, self.subject.detail))
        probe = self.probe()
        prun = ProviderRun(Target(self.name, probe.device_class, self.spec.precision), latency_ms=result.latency_ms,
                           placement=result.placement, capture_peak_bytes=result.peak_capture_bytes,
                           latency_p90_ms=result.latency_p90_ms if self.subject.repeats else None,
                           session_options=dict(self.spec.session_options) or None)
        if probe.reason and probe.device_class == device.GPU:
            prun.reason = f"device class `{device.GPU}`: {probe.reason}"
        for layer in run.layers:
            prun.layers[layer.name] = _layer(run, layer, result.outputs, result.values, self.spec.precision)
        subject = self.subject  # graph outputs are the root layers, in order
        against_reference.outputs(prun, result.arrays, run.layers, subject.outputs, subject.output_tolerance)
        return prun


def _detail(run: ModelRun, sink: Callable[[str], None] | None) -> ort_session.Detail | None:
    """Capture progress for ``sink``, by layer name, at most every ``DETAIL_EVERY_S``."""
    if sink is None:
        return None
    layer_of = {site.value: name for name, site in run.onnx_map.items() if site.kind == "value"}
    last = [time.perf_counter()]

    def tell(what: str, index: int, count: int, value: str) -> None:
        if time.perf_counter() - last[0] >= DETAIL_EVERY_S:
            last[0] = time.perf_counter()
            sink(f"{DETAIL}{what} {index}/{count}, to {layer_of.get(value, value)}")

    return tell


def _layer(run: ModelRun, layer: LayerInfo, outputs: list[Any], values: dict[str, Any],
           precision: str) -> ProviderLayer:
    site = run.onnx_map.get(layer.name)
    if site is None:
        return ProviderLayer("absent", reason=FORWARD_ONLY if is_gradient(layer.name) else "not mapped")
    if site.kind == "absent" and site.candidates:  # several values its shape allows: their numbers decide
        found = pick({v: values[v] for v in site.candidates if v in values}, layer.fp, precision)
        if found.value is None:
            return ProviderLayer(LayerStatus.ABSENT, reason=found.reason(layer.fp.shape))
        site = OnnxSite(SiteKind.VALUE, found.value)
    if site.kind in ("folded", "absent"):
        return ProviderLayer(site.kind, reason=site.reason)
    if site.kind == "output":
        fp = outputs[site.output] if site.output is not None and site.output < len(outputs) else None
    else:
        fp = values.get(site.value)
    if fp is None:
        return ProviderLayer("absent", reason="value not returned")
    return ProviderLayer("ok", fp, against_reference.error_against(fp, layer.fp))


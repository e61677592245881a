"""Run an exported model on one ONNX Runtime execution provider (no torch here).

Two sessions: the unmodified graph (what ships: its outputs and latency) and a copy with the mapped
intermediates marked as outputs, which changes what ONNX Runtime can fuse. Sessions open the model by
path where it has one (external data never re-serialized) and run one at a time, capture sessions
without the CPU arena, so one's peak is not held into the next."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gate.core.failure import ModelError
from gate.core.runs import latency
from gate.core.status import ErrorStatus
from gate.export.saved import first_line, marked_source
from gate.fingerprint import Fingerprint, fingerprint
from gate.runners import heap, ort_placement, ort_segments
from gate.runners.ort_capture import Capture, capture, floating
from gate.runners.ort_segments import chunks


@dataclass
class OrtRun:
    outputs: list[Fingerprint]  # graph outputs of the unmodified graph, in order
    values: dict[str, Fingerprint] = field(default_factory=dict)  # marked intermediate values
    latency_ms: float | None = None
    latency_p90_ms: float | None = None
    placement: dict[str, Any] | None = None
    peak_capture_bytes: int = 0
    arrays: list[np.ndarray] = field(default_factory=list)  # the outputs themselves (exact metrics)
    capture: Capture | None = None  # how the marked values were fingerprinted (device, host copies)
    segments: int = 0  # graph segments the capture ran in (0: whole-graph runs)


Detail = Callable[[str, int, int, str], None]  # (what, index from 1, how many, the last value it marks)

_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
           "all": "ORT_ENABLE_ALL"}
_MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}


@dataclass(frozen=True)
class SessionSpec:
    """How every session of one provider is made: the EP, its options and the config's ``session-options``."""

    provider: str
    options: Mapping[str, Any] = field(default_factory=dict)
    session_options: Mapping[str, Any] = field(default_factory=dict)
    threads: int | None = None  # PARITY_GATE_THREADS; session-options intra-op-threads wins

    def sess_options(self, record: bool, profile: bool = False, arena: bool = True, prepack: bool = True):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.enable_cpu_mem_arena = arena
        if not prepack and "session.disable_prepacking" not in self.session_options.get("config-entries", {}):
            so.add_session_config_entry("session.disable_prepacking", "1")
        if record:
            so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        if profile:
            import tempfile

            so.enable_profiling = True
            # A folder of its own (mode 0700), never a name another user of /tmp can guess and plant first.
            so.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="parity-gate-profile-"), "profile")
        if self.threads:
            so.intra_op_num_threads = self.threads
        o = self.session_options
        if "graph-optimization-level" in o:
            so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS[o["graph-optimization-level"]])
        if "execution-mode" in o:
            so.execution_mode = getattr(ort.ExecutionMode, _MODES[o["execution-mode"]])
        if "intra-op-threads" in o:
            so.intra_op_num_threads = o["intra-op-threads"]
        if "inter-op-threads" in o:
            so.inter_op_num_threads = o["inter-op-threads"]
        for name, value in o.get("free-dimension-overrides", {}).items():
            so.add_free_dimension_override_by_name(name, value)
        for key, value in o.get("config-entries", {}).items():
            so.add_session_config_entry(key, value)
        return so

    def open(self, model: bytes | str, what: str, record: bool = False, profile: bool = False, arena: bool = True,
             prepack: bool = True):
        import onnxruntime as ort

        try:
            return ort.InferenceSession(model, sess_options=self.sess_options(record, profile, arena, prepack),
                                        providers=[(self.provider, dict(self.options))])
        except Exception as exc:
            raise ModelError(f"{what}: {self.provider} failed to load the model: {first_line(exc)}",
                             ErrorStatus.LOAD_FAIL) from None


def available_providers() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def mark_outputs(proto: onnx.ModelProto, names: Sequence[str]) -> onnx.ModelProto:
    """A copy of ``proto`` whose graph also outputs ``names`` (types from value_info where known)."""
    marked = onnx.ModelProto()
    marked.CopyFrom(proto)
    existing = {o.name for o in marked.graph.output}
    infos = {vi.name: vi for vi in marked.graph.value_info}
    for name in dict.fromkeys(n for n in names if n not in existing):
        marked.graph.output.append(infos[name] if name in infos else onnx.ValueInfoProto(name=name))
    return marked


def _feed(session, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise ModelError(f"the ONNX graph takes {len(names)} inputs, {len(inputs)} given")
    return dict(zip(names, inputs, strict=True))


def run(proto: onnx.ModelProto, spec: SessionSpec, inputs: Sequence[np.ndarray], values: Sequence[str], what: str,
        timing_runs: int = 5, capture_bytes: int | None = None, value_bytes: Mapping[str, int] | None = None,
        keep_outputs: bool = False, model: Path | None = None, detail: Detail | None = None) -> OrtRun:
    """Fingerprints of the shipped outputs and of ``values``; median latency of ``timing_runs`` warm runs.

    ``model``: the shipped graph's file; the marked copies share its weights file. ONNX Runtime holds all
    marked values at once, so past ``capture_bytes`` the graph is captured a segment at a time (where it
    cannot be cut, in chunks of whole runs).
    """
    how = Capture.for_provider(spec.provider, spec.options)
    shipped = str(model) if model is not None else proto.SerializeToString()
    result, feed = _shipped(shipped, spec, inputs, what, timing_runs, keep_outputs, how)
    sizes = value_bytes or {}
    marked = list(dict.fromkeys(values))
    parts = chunks(marked, sizes, capture_bytes)
    tell = detail or (lambda *_: None)
    if len(parts) > 1 and capture_bytes and _segments(result, proto, marked, sizes, capture_bytes, spec, feed, what,
                                                      model, tell):
        return result
    for i, part in enumerate(parts):
        tell("capture run", i + 1, len(parts), part[-1])
        result.peak_capture_bytes = max(result.peak_capture_bytes, sum(sizes.get(v, 0) for v in part))
        _capture(result, proto, part, spec, inputs, what, how, model)
    return result


def _shipped(shipped: bytes | str, spec: SessionSpec, inputs: Sequence[np.ndarray], what: str,
             timing_runs: int, keep_outputs: bool, how: Capture) -> tuple[OrtRun, dict[str, np.ndarray]]:
    """The unmodified graph's outputs, latency and placement; its session released before this returns."""
    session = spec.open(shipped, what, record=True)
    feed = _feed(session, inputs)
    try:
        outputs = session.run(None, feed)
        times = []
        for _ in range(timing_runs):
            start = time.perf_counter()
            session.run(None, feed)
            times.append((time.perf_counter() - start) * 1e3)
    except Exception as exc:
        raise ModelError(f"{what}: {spec.provider} failed to run the model: {first_line(exc)}") from None
    median, p90 = latency(times)
    result = OrtRun([fingerprint(floating(np.asarray(o))) for o in outputs], latency_ms=median, latency_p90_ms=p90,
                    capture=how)
    result.placement = ort_placement.placement(session, spec, shipped, feed, what)
    # Copies: an output of session.run can be a view that keeps the whole arena alive after the session.
    result.arrays = [np.array(o) for o in outputs] if keep_outputs else []
    del outputs, session
    gc.collect()
    heap.trim()  # the shipped session's arena and prepacked weights, freed into the heap
    return result, feed


def _segments(result: OrtRun, proto: onnx.ModelProto, values: list[str], sizes: Mapping[str, int], budget: int,
              spec: SessionSpec, feed: Mapping[str, np.ndarray], what: str, model: Path | None,
              tell: Detail) -> bool:
    """Capture ``values`` one segment of the graph at a time (``ort_segments``). False, with nothing
    recorded, when the graph cannot be cut or a segment fails: the caller's whole-graph runs then
    report a model that fails on its own."""
    plan = ort_segments.plan(proto.graph, values, sizes, budget, feed)
    if not plan or len(plan) < 2:
        return False
    last = ort_segments.last_reader(plan)
    held: dict[str, np.ndarray] = {}
    assert result.capture is not None  # the shipped session's run set it
    try:
        for k, seg in enumerate(plan):
            tell("segment", k + 1, len(plan), seg.marked[-1])
            given = {n: feed[n] if n in feed else held[n] for n in seg.inputs}
            sub = ort_segments.model(proto, seg, {n: ort_segments.tensor_type(v) for n, v in given.items()}, k)
            with marked_source(sub, model) as source:
                del sub
                session = spec.open(source, what, arena=False, prepack=False)
            result.values.update(capture(session, given, seg.marked, result.capture, seg.keep, held))
            del session, given
            for name in [n for n in held if last.get(n, -1) <= k]:
                del held[name]
            gc.collect()
            heap.trim()  # the segment's activations, freed into the heap, go back before the next
            result.peak_capture_bytes = max(result.peak_capture_bytes, sum(sizes.get(v, 0) for v in seg.marked))
    except Exception:  # noqa: BLE001 - any failure falls back to whole-graph runs, which name it
        result.values.clear()
        result.peak_capture_bytes = 0
        return False
    result.values = {v: result.values[v] for v in values}  # the caller's order, as whole-graph runs give
    result.segments = len(plan)
    return True


def _capture(result: OrtRun, proto: onnx.ModelProto, part: list[str], spec: SessionSpec,
             inputs: Sequence[np.ndarray], what: str, how: Capture, model: Path | None) -> None:
    """One session with ``part`` marked as outputs, without weight prepacking: prepacking copies
    every MatMul weight that ONNX Runtime would otherwise use in place from its file, for a session
    that runs once."""
    marked = mark_outputs(proto, part)
    with marked_source(marked, model) as source:
        del marked
        session = spec.open(source, what, arena=False, prepack=False)
    try:
        result.values.update(capture(session, _feed(session, inputs), part, how))
    except Exception as exc:
        raise ModelError(f"{what}: {spec.provider} failed to run the model with intermediates marked: "
                         f"{first_line(exc)}") from None
    del session
    gc.collect()
    heap.trim()

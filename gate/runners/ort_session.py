"""Run an exported model on one ONNX Runtime execution provider.

Two sessions: the unmodified graph (its outputs are what ships; its latency is recorded) and
a copy with the mapped intermediate values marked as graph outputs. Marking values changes
what ONNX Runtime can fuse, which is why the shipped outputs come from the first session.
No torch here: this module runs on runners that only have an ONNX Runtime distribution.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from gate.errors import ModelError
from gate.fingerprint import Fingerprint, fingerprint


@dataclass
class OrtRun:
    outputs: list[Fingerprint]  # graph outputs of the unmodified graph, in order
    values: dict[str, Fingerprint] = field(default_factory=dict)  # marked intermediate values
    latency_ms: float | None = None
    placement: dict[str, Any] | None = None
    peak_capture_bytes: int = 0


def available_providers() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def mark_outputs(proto: onnx.ModelProto, names: Sequence[str]) -> onnx.ModelProto:
    """A copy of ``proto`` whose graph also outputs ``names`` (types from value_info where known)."""
    marked = onnx.ModelProto()
    marked.CopyFrom(proto)
    existing = {o.name for o in marked.graph.output}
    infos = {vi.name: vi for vi in marked.graph.value_info}
    for name in names:
        if name in existing:
            continue
        existing.add(name)
        if name in infos:
            marked.graph.output.append(infos[name])
        else:
            marked.graph.output.append(onnx.ValueInfoProto(name=name))
    return marked


def _session(model_bytes: bytes, provider: str, options: Mapping[str, Any], what: str, threads: int | None,
             record: bool = False):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if record:
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if threads:
        so.intra_op_num_threads = threads
    try:
        return ort.InferenceSession(model_bytes, sess_options=so, providers=[(provider, dict(options))])
    except Exception as exc:
        raise ModelError(f"{what}: {provider} failed to load the model: {_line(exc)}", "LOAD_FAIL") from None


def _line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


def _feed(session, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise ModelError(f"the ONNX graph takes {len(names)} inputs, {len(inputs)} given")
    return dict(zip(names, inputs, strict=True))


def placement(session, provider: str) -> dict[str, Any] | None:
    """Which nodes ran on ``provider`` and which fell back to another EP (ONNX Runtime's own
    record of the partitioning, after its graph optimizations)."""
    try:
        subgraphs = session.get_provider_graph_assignment_info()
    except Exception:  # older ONNX Runtime, or recording not supported by this build
        return None
    counts: dict[str, int] = {}
    fallback: list[str] = []
    for sub in subgraphs:
        nodes = sub.get_nodes()
        counts[sub.ep_name] = counts.get(sub.ep_name, 0) + len(nodes)
        if sub.ep_name != provider:
            fallback.extend(f"{n.op_type}:{n.name}" for n in nodes)
    return {"nodes": sum(counts.values()), "by_provider": dict(sorted(counts.items())),
            "fallback_ops": sorted({f.split(":", 1)[0] for f in fallback}),
            "fallback_nodes": sorted(fallback)[:200]}


def chunks(values: Sequence[str], sizes: Mapping[str, int], budget: int | None) -> list[list[str]]:
    """Split marked values so one run never holds more than ``budget`` bytes of them."""
    if not budget:
        return [list(values)] if values else []
    out: list[list[str]] = []
    current: list[str] = []
    used = 0
    for name in values:
        size = sizes.get(name, 0)
        if current and used + size > budget:
            out.append(current)
            current, used = [], 0
        current.append(name)
        used += size
    if current:
        out.append(current)
    return out


def run(proto: onnx.ModelProto, provider: str, options: Mapping[str, Any], inputs: Sequence[np.ndarray],
        values: Sequence[str], what: str, timing_runs: int = 5, threads: int | None = None,
        capture_bytes: int | None = None, value_bytes: Mapping[str, int] | None = None) -> OrtRun:
    """Fingerprints of the shipped outputs and of ``values``; median latency of ``timing_runs`` warm runs.

    Marked values come back all at once from ONNX Runtime, so with ``capture_bytes`` set they
    are split into chunks of at most that many bytes, one run each.
    """
    session = _session(proto.SerializeToString(), provider, options, what, threads, record=True)
    feed = _feed(session, inputs)
    try:
        outputs = session.run(None, feed)
        times = []
        for _ in range(timing_runs):
            start = time.perf_counter()
            session.run(None, feed)
            times.append((time.perf_counter() - start) * 1e3)
    except Exception as exc:
        raise ModelError(f"{what}: {provider} failed to run the model: {_line(exc)}") from None
    result = OrtRun([fingerprint(_floating(np.asarray(o))) for o in outputs],
                    latency_ms=float(np.median(times)) if times else None)
    result.placement = placement(session, provider)
    del outputs, session
    wanted = list(dict.fromkeys(values))
    sizes = value_bytes or {}
    for part in chunks(wanted, sizes, capture_bytes):
        result.peak_capture_bytes = max(result.peak_capture_bytes, sum(sizes.get(v, 0) for v in part))
        marked = mark_outputs(proto, part)
        session = _session(marked.SerializeToString(), provider, options, what, threads)
        try:
            arrays = session.run(part, _feed(session, inputs))
        except Exception as exc:
            raise ModelError(f"{what}: {provider} failed to run the model with intermediates marked: "
                             f"{_line(exc)}") from None
        for name, array in zip(part, arrays, strict=True):
            result.values[name] = fingerprint(_floating(np.asarray(array)))
        del arrays, session
    return result


def _floating(a: np.ndarray) -> np.ndarray:
    return a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64)

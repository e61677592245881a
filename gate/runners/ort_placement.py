"""Where ONNX Runtime ran a graph's nodes, and the EP options that decide it.

One record (``{nodes, by_provider, fallback_ops, fallback_nodes, source?, options?}``) from ONNX
Runtime's partitioning record (``assignment``, nodes before fusion) or, where a build lacks it, a
profiled run's kernels (``profile``). Their counts differ (fused kernels), so the placement audit
compares only records of one source. ``options`` keeps the EP options that change what an EP takes
or how it computes (``RECORDED_OPTIONS``); paths are left out, they differ per runner."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

RECORDED_OPTIONS = {
    "TensorrtExecutionProvider": ("trt_fp16_enable", "trt_int8_enable", "trt_bf16_enable", "trt_int8_use_native_calibration_table",
                                  "trt_engine_cache_enable", "trt_timing_cache_enable", "trt_builder_optimization_level",
                                  "trt_min_subgraph_size", "trt_max_partition_iterations", "trt_layer_norm_fp32_fallback",
                                  "trt_dla_enable", "trt_sparsity_enable", "trt_detailed_build_log"),
    "CUDAExecutionProvider": ("use_tf32", "cudnn_conv_algo_search", "cudnn_conv_use_max_workspace", "prefer_nhwc",
                              "enable_cuda_graph", "enable_skip_layer_norm_strict_mode", "fuse_conv_bias"),
}
_LIMIT = 200  # fallback nodes listed (the count is exact)


def recorded_options(provider: str, options: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    mine = options.get(provider) or {}
    return {k: str(mine[k]) for k in RECORDED_OPTIONS.get(provider, ()) if k in mine}


def record(assigned: Iterable[tuple[str, str, str]], provider: str, source: str) -> dict[str, Any]:
    assigned = list(assigned)
    counts = Counter(ep for ep, _, _ in assigned)
    fallback = [f"{op_type}:{name}" for ep, op_type, name in assigned if ep != provider]
    out = {"nodes": sum(counts.values()), "by_provider": dict(sorted(counts.items())),
           "fallback_ops": sorted({f.split(":", 1)[0] for f in fallback}), "fallback_nodes": sorted(fallback)[:_LIMIT]}
    if source != "assignment":  # the default source goes unsaid: baselines written before keep their bytes
        out["source"] = source
    return out


def from_assignment(session, provider: str) -> dict[str, Any] | None:
    try:
        subgraphs = session.get_provider_graph_assignment_info()
    except Exception:  # older ONNX Runtime, or recording not supported by this build
        return None
    return record(((sub.ep_name, n.op_type, n.name) for sub in subgraphs for n in sub.get_nodes()), provider,
                  "assignment")


def from_profile(events: list[dict[str, Any]], provider: str) -> dict[str, Any]:
    """The placement of the kernels a profiled run executed (ONNX Runtime's profile JSON events)."""
    kernels = [e for e in events if isinstance(e, dict) and e.get("cat") == "Node"
               and str(e.get("name", "")).endswith("_kernel_time") and isinstance(e.get("args"), dict)]
    seen: dict[str, tuple[str, str, str]] = {}
    for e in kernels:
        name = str(e["name"])[: -len("_kernel_time")]
        args = e["args"]
        seen.setdefault(name, (str(args.get("provider", "")), str(args.get("op_name", "")), name))
    return record(seen.values(), provider, "profile")


def profile(spec, model: bytes | str, feed: Mapping[str, Any], what: str) -> list[dict[str, Any]]:
    """The events of one profiled run of ``model`` under ``spec`` (an ``ort_session.SessionSpec``)."""
    session = spec.open(model, what, profile=True)
    session.run(None, dict(feed))
    path = session.end_profiling()
    try:
        with open(path, encoding="utf-8") as f:
            events = json.load(f)
    finally:
        os.unlink(path)
        os.rmdir(os.path.dirname(path))  # the private folder ort_session made for it
    return events if isinstance(events, list) else []


def placement(session, spec, model: bytes | str, feed: Mapping[str, Any], what: str) -> dict[str, Any] | None:
    """The placement record of ``spec.provider``: the assignment record, else a profiled run's."""
    found = from_assignment(session, spec.provider)
    if found is None:
        try:
            found = from_profile(profile(spec, model, feed, what), spec.provider)
        except Exception:  # profiling is diagnostics: never the reason a provider fails
            return None
    try:
        options = recorded_options(spec.provider, session.get_provider_options())
    except Exception:
        options = {}
    if options:
        found["options"] = options
    return found

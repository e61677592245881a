"""Assemble the JSON report (contract in README, "JSON report") and its verdict."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.compare import checks, hints
from gate.config import ModelSpec
from gate.runs import ModelRun

SCHEMA, VERSION = "parity-gate/report", 1


def pick_entry(devices: dict[str, Any], device: str) -> tuple[dict | None, str | None]:
    """The baseline entry for ``device``, else one of the same architecture (noted), else None."""
    if device in devices:
        return devices[device], None
    arch, _, precision = device.partition(":")
    arch = arch.split("-")[0]
    for other in sorted(devices):
        other_arch, _, other_precision = other.partition(":")
        if other_precision == precision and other_arch.split("-")[0] == arch and not arch.startswith(("gpu", "cuda")):
            return devices[other], f"compared with the baseline of device class {other} (none for {device})"
    return None, None


def audits(prun, base_entry: dict | None, policy: Policy) -> list[dict]:
    """Provider-level checks: CPU fallbacks added since the baseline, latency against the baseline."""
    out = []
    before = (base_entry or {}).get("placement")
    now = prun.placement
    if policy.placement != "off" and before is not None and now is not None:
        added = sorted(set(now["fallback_ops"]) - set(before["fallback_ops"]))
        grew = len(now["fallback_nodes"]) - len(before["fallback_nodes"])
        if added or grew > 0:
            out.append({"check": "placement", "status": "fail" if policy.placement == "fail" else "warn",
                        "message": f"{prun.name}: {grew if grew > 0 else 0} more node(s) fall back to another EP"
                        + (f" (new op types: {', '.join(added)})" if added else "")})
    base_latency = (base_entry or {}).get("latency_ms")
    if prun.latency_ms is not None and base_latency:
        ratio = prun.latency_ms / base_latency
        gated = policy.max_slowdown is not None and ratio > 1 + policy.max_slowdown
        if gated:
            out.append({"check": "latency", "status": "fail",
                        "message": f"{prun.name}: median latency {prun.latency_ms:.3g} ms is {ratio:.2f}x the "
                        f"baseline {base_latency:.3g} ms (max-slowdown {policy.max_slowdown:g})"})
    return out


@dataclass(frozen=True)
class Policy:
    placement: str = "warn"
    max_slowdown: float | None = None
    require: tuple[str, ...] = ()


def model_report(spec: ModelSpec, run: ModelRun, baseline: dict | None, path: Path, update_cmd: str,
                 policy: Policy = Policy()) -> dict:
    report: dict[str, Any] = {
        "name": spec.name, "status": "pass", "error": run.error,
        "baseline": {"path": str(path), "exists": baseline is not None},
        "exporter": run.meta.get("exporter"), "export_fallback": run.meta.get("export_fallback"),
        "opset": run.meta.get("opset"), "reference": dict(run.reference), "layers": len(run.layers),
        "first_regression": None, "providers": [],
    }
    order = {layer.name: i for i, layer in enumerate(run.layers)}
    if baseline is None:
        report["status"] = "no-baseline"
        report["message"] = f"no baseline at {path}: create it with `{update_cmd}`"
    candidates = []
    ref_entry: dict[str, Any] = {"name": "torch-cpu", "role": "reference", "precision": run.reference["dtype"],
                                 "device": "cpu", "status": "pass", "reason": None, "latency_ms": None,
                                 "first_regression": None, "layers": []}
    if baseline is not None and run.layers:
        ref_entry["layers"] = checks.reference_rows(run, baseline, spec)
    elif baseline is None:
        ref_entry["status"], ref_entry["reason"] = "no-baseline", report["message"]
    report["providers"].append(ref_entry)
    for prun in run.providers:
        entry: dict[str, Any] = {"name": prun.name, "role": "runtime", "precision": prun.precision,
                                 "device": prun.device, "status": "pass", "reason": prun.reason,
                                 "latency_ms": prun.latency_ms, "first_regression": None, "layers": []}
        report["providers"].append(entry)
        entry["audits"] = []
        if prun.status == "skipped":
            entry["status"] = "skipped"
            if prun.name in policy.require:
                entry["status"] = "error"
                entry["error_status"] = "LOAD_FAIL"
                entry["reason"] = f"{prun.name} is required but not available here"
            continue
        if prun.status == "error":
            entry["status"] = "error"
            entry["error_status"] = prun.error_status
            continue
        base_entry, note = (None, None)
        if baseline is not None:
            base_entry, note = pick_entry(baseline["providers"].get(prun.name, {}), prun.device)
            if base_entry is None:
                entry["status"] = "no-baseline"
                entry["reason"] = (f"no baseline for {prun.name} on device class {prun.device}: create it with "
                                   f"`{update_cmd} --provider {prun.name}`")
            elif note:
                entry["reason"] = note
            if base_entry is not None:
                entry["baseline_latency_ms"] = base_entry.get("latency_ms")
        entry["placement"] = prun.placement
        entry["capture_peak_mb"] = (None if prun.capture_peak_bytes is None
                                    else round(prun.capture_peak_bytes / 2**20, 3))
        entry["audits"] = audits(prun, base_entry, policy)
        entry["layers"] = checks.runtime_rows(run, prun, base_entry, spec)
    for entry in report["providers"]:
        rows = entry["layers"]
        entry["checked"] = sum(r["status"] in ("pass", "fail") for r in rows)
        entry["failed"] = sum(checks.is_failure(r) for r in rows)
        entry["folded"] = sum(r["status"] == "folded" for r in rows)
        first = checks.first_failure(rows, order)
        if first is None:
            failed_audit = next((a for a in entry.get("audits", []) if a["status"] == "fail"), None)
            if failed_audit is not None:
                first = {"layer": "(model)", "type": "", "check": failed_audit["check"], "value": None,
                         "threshold": None, "message": failed_audit["message"]}
        if first is not None:
            entry["first_regression"] = checks.regression(first)
            entry["status"] = "regressed"
            candidates.append((order.get(first["layer"], len(order)), entry, first))
    if candidates:
        # Earliest layer wins; on a tie the reference (a model change) explains the runtimes.
        index, entry, first = min(candidates, key=lambda c: (c[0], c[1]["role"] != "reference"))
        report["first_regression"] = {"provider": entry["name"], "precision": entry["precision"],
                                      **checks.regression(first)}
        report["status"] = "regressed"
    if any(e["status"] == "no-baseline" for e in report["providers"]) and report["status"] == "pass":
        report["status"] = "no-baseline"
    if run.error or any(e["status"] == "error" for e in report["providers"]):
        report["status"] = "error"
    report["hints"] = hints.model_hints(spec, run, baseline, report)  # diagnosis only; never changes the verdict
    return report


def assemble(models: list[dict], environment: dict) -> dict:
    firsts = [(m["first_regression"], m) for m in models if m["first_regression"]]
    first = None
    if firsts:
        fr, m = firsts[0]  # models run in configured order; the first model's first regression leads
        first = {"model": m["name"], **fr}
    errors = sum(m["status"] == "error" for m in models)
    regressed = any(m["status"] in ("regressed", "no-baseline") for m in models)
    verdict = "error" if errors else ("regressed" if regressed else "pass")
    providers = sorted({p["name"] for m in models for p in m["providers"] if p["role"] == "runtime"})
    return {
        "schema": SCHEMA, "version": VERSION, "verdict": verdict, "first_regression": first,
        "summary": {"models": len(models), "layers": sum(m["layers"] for m in models), "providers": providers,
                    "regressions": sum(p.get("failed", 0) for m in models for p in m["providers"]),
                    "errors": errors},
        "environment": environment,
        "models": models,
    }


def environment(versions: dict, backend: str) -> dict:
    return {"parity_gate": versions.get("parity_gate"), "torch": versions.get("torch"), "onnx": versions.get("onnx"),
            "onnxruntime": versions.get("onnxruntime"), "python": platform.python_version(),
            "platform": f"{platform.system()}-{platform.machine()}", "backend": backend}


EXIT = {"pass": 0, "regressed": 1, "error": 3}

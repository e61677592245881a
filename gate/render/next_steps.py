"""One line of next steps per model that did not pass, worded for its cause.

- a model change (the float64 reference moved): update the baseline if the change is intended;
- a runtime regression (the reference is unchanged): the ONNX graph or that provider changed;
- a missing baseline (model, or one provider's device class): the command that creates it;
- a model or provider that failed to build, export, load or run: where to reproduce it.
"""

from __future__ import annotations

from gate.core.status import AuditStatus, ErrorStatus, ModelStatus, Role, TargetStatus
from gate.render.text import code, plain
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

MAX_MODELS = 20
_MODEL_ERRORS = {
    ErrorStatus.BUILD_FAIL: "its factory failed to build the model",
    ErrorStatus.EXPORT_FAIL: "it failed to export to ONNX",
    ErrorStatus.EMPTY: "it has nothing to check",
    ErrorStatus.NO_RESULT: "no result file holds it: did its export and collect jobs run and upload their artifacts?",
}


def next_steps(report: Report) -> str:
    lines = [f"- {code(m.name)}: {_step(m)}" for m in report.models if m.status != ModelStatus.PASS]
    if not lines:
        return ""
    if len(lines) > MAX_MODELS:
        lines = lines[:MAX_MODELS] + [f"- … and {len(lines) - MAX_MODELS} more models (see the job summary)."]
    return "**Next steps**\n\n" + "\n".join(lines)


def _commit(m: ModelVerdict) -> str:
    return f" and commit {code(m.baseline_path)}" if m.baseline_path else " and commit the baseline file"


def _step(m: ModelVerdict) -> str:
    if m.status == ModelStatus.ERROR:
        return _error_step(m)
    if m.status == ModelStatus.NO_BASELINE:
        return _missing_step(m)
    reference = next((p for p in m.providers if p.role == Role.REFERENCE and p.status == TargetStatus.REGRESSED),
                     None)
    if reference is not None:
        where = f" first at {code(reference.first_regression.layer)}" if reference.first_regression else ""
        return (f"the model changed (its float64 reference moved{where}). If that is intended, run "
                f"{code(m.recreate, 260)}{_commit(m)}.")
    return _runtime_step(m)


def _runtime_step(m: ModelVerdict) -> str:
    regressed = [p for p in m.providers if p.role == Role.RUNTIME and p.status == TargetStatus.REGRESSED]
    names = ", ".join(code(p.name) for p in regressed[:4]) or "a provider"
    audits_only = regressed and all(p.failed == 0 for p in regressed)
    if audits_only:
        checks = sorted({a.check for p in regressed for a in p.audits if a.status == AuditStatus.FAIL})
        return (f"{names} {'slowed down' if checks == ['latency'] else 'failed ' + ', '.join(checks)} on an unchanged "
                "model: see the audit lines above.")
    hints = " — see the hints under **Diagnosis**" if any(h.kind != "hints-unavailable" for h in m.hints) else \
        " — compare the layer tables below"
    moved = _runtime_versions(m)
    return f"the PyTorch model is unchanged; the ONNX graph or {names} changed{moved}{hints}."


def _runtime_versions(m: ModelVerdict) -> str:
    changed = [f"{plain(k, 20)} {plain(v.get('baseline'), 40)} → {plain(v.get('run'), 40)}"
               for k, v in m.versions.items() if k in ("onnxruntime", "onnx")]
    return f" ({', '.join(changed)} since the baseline)" if changed else ""


def _missing_step(m: ModelVerdict) -> str:
    if not m.baseline_exists:
        return f"no baseline yet: run {code(m.recreate, 260)}{_commit(m)}."
    missing = [p for p in m.providers if p.status == TargetStatus.NO_BASELINE]
    first = missing[0] if missing else None
    if first is None:
        return f"no baseline entry: run {code(m.recreate, 260)}{_commit(m)}."
    command = f"{m.recreate} --provider {first.name}"
    return (f"{code(first.name)} has no baseline entry for {plain(first.label, 60)}: run {code(command, 300)} on a "
            f"runner that has it{_commit(m)}.")


def _error_step(m: ModelVerdict) -> str:
    if m.error:
        status = m.error.error_status
        why = _MODEL_ERRORS.get(status, f"it failed ({plain(status, 20)})")
        return f"{why}. Reproduce with {code(f'parity-gate check --model {m.name}', 200)}; the error is above."
    failed = [p for p in m.providers if p.status == TargetStatus.ERROR]
    if not failed:
        return "see the error above."
    p = failed[0]
    return _provider_error(m, p)


def _provider_error(m: ModelVerdict, p: ProviderVerdict) -> str:
    if p.error_status == ErrorStatus.NO_GPU:
        return plain(p.reason or "no GPU provider could run on this runner", 600)
    if p.error_status == ErrorStatus.NO_RESULT:  # a required provider's matrix leg left no result
        return plain(p.reason or f"no result file holds {p.name}", 600) + ": see that job's log."
    if p.error_status == ErrorStatus.LOAD_FAIL:
        return (f"{code(p.name)} failed to load on its runner: run {code('parity-gate doctor', 40)} there — its ONNX "
                "Runtime build, drivers or provider options do not match (a provider listed in `require` must be "
                "available).")
    how = plain(p.error_status or "error", 20)
    command = f"parity-gate check --model {m.name} --provider {p.name}"
    return f"{code(p.name)} failed while running the model ({how}): reproduce with {code(command, 300)} on that runner."

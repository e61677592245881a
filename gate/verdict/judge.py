"""Judge a run against its baseline: per target, rows and audits; per model, the first
regression and a status; over all models, the report and its verdict."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gate.config import LayerTolerance, ModelSpec
from gate.core.layers import module_of
from gate.core.runs import ModelRun, ProviderRun
from gate.core.spans import span
from gate.core.status import (
    AuditStatus,
    Check,
    ComparisonStatus,
    DataDependence,
    ErrorStatus,
    ModelStatus,
    Role,
    RowStatus,
    RunStatus,
    SkipKind,
    TargetStatus,
)
from gate.core.target import DEFAULT_PRECISION, REFERENCE_PROVIDER
from gate.formats.baseline import Baseline, Entry
from gate.verdict import (
    causality,
    causes,
    checks,
    data_dependent,
    graph_precision,
    hints,
    model_audits,
    rollup,
)
from gate.verdict.notes import Comparison
from gate.verdict.placement import placement_audit
from gate.verdict.rows import Audit, Regression, Row
from gate.verdict.structure import Structure, described
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report
from gate.verdict.versions import version_changes

Dependent = dict[str, DataDependence]  # the data-dependent layers, and how each is known


@dataclass(frozen=True)
class Policy:
    """Provider-level gates from the config: CPU fallbacks, slowdown, providers that must run."""

    placement: str = "warn"  # "warn" | "fail" | "off"
    max_slowdown: float | None = None
    require: tuple[str, ...] = ()
    precisions: tuple[tuple[str, str], ...] = ()  # (provider, precision) as configured

    def configured(self, provider: str) -> list[str]:
        """The precisions the config asks of ``provider`` (the default where it names none)."""
        return [p for name, p in self.precisions if name == provider] or [DEFAULT_PRECISION]


def audits(prun: ProviderRun, entry: Entry | None, policy: Policy) -> list[Audit]:
    out = placement_audit(prun.name, entry.placement if entry is not None else None, prun.placement, policy.placement)
    if entry is not None and (entry.session_options or {}) != (prun.session_options or {}):
        out.append(Audit(Check.SESSION_OPTIONS, AuditStatus.WARN, f"{prun.name}: session options changed since the baseline "
                         f"({entry.session_options or {}} -> {prun.session_options or {}}): they change what ONNX Runtime "
                         "fuses and how it computes"))
    base_latency = entry.latency_ms if entry is not None else None
    if prun.latency_ms is not None and base_latency and policy.max_slowdown is not None:
        ratio = prun.latency_ms / base_latency
        if ratio > 1 + policy.max_slowdown:
            out.append(Audit(Check.LATENCY, AuditStatus.FAIL, f"{prun.name}: median latency {prun.latency_ms:.3g} ms is {ratio:.2f}x "
                             f"the baseline {base_latency:.3g} ms (max-slowdown {policy.max_slowdown:g})"))
    return out


def _reference(run: ModelRun, baseline: Baseline | None, spec: ModelSpec, missing: str | None,
               st: Structure | None, dependent: Dependent) -> ProviderVerdict:
    ref = ProviderVerdict(REFERENCE_PROVIDER, Role.REFERENCE, run.reference_dtype, "cpu")
    if run.error is not None and not run.layers:  # it never ran: never a pass, nor only a missing baseline
        ref.status, ref.error_status = TargetStatus.ERROR, run.error.error_status
        refused = run.error.error_status == ErrorStatus.BAD_BASELINE  # it may have run; nothing can judge it
        ref.reason = f"{'not judged' if refused else 'did not run'}: {run.error.message}"
        ref.where = run.error.where
    elif baseline is None:
        ref.status, ref.reason = TargetStatus.NO_BASELINE, missing
    elif run.layers:
        ref.rows = checks.reference_rows(run, baseline, spec, st, dependent)
    return ref


def _runtime(run: ModelRun, prun: ProviderRun, baseline: Baseline | None, spec: ModelSpec, update_cmd: str,
             policy: Policy, st: Structure | None, dependent: Dependent) -> ProviderVerdict:
    pv = ProviderVerdict(prun.name, Role.RUNTIME, prun.precision, prun.target.label, reason=prun.reason,
                         latency_ms=prun.latency_ms, latency_p90_ms=prun.latency_p90_ms)
    if prun.status == RunStatus.SKIPPED:
        pv.status, pv.skip = TargetStatus.SKIPPED, prun.skip
        if prun.name in policy.require:
            pv.status, pv.error_status, pv.skip = TargetStatus.ERROR, ErrorStatus.LOAD_FAIL, None
            pv.reason = f"{prun.name} is required but not available here"
        return pv
    if prun.status == RunStatus.ERROR:
        pv.status, pv.error_status, pv.where, pv.trace = TargetStatus.ERROR, prun.error_status, prun.where, prun.trace
        return pv
    entry, lowered = None, None
    if baseline is not None:
        lowered = graph_precision.change(run, baseline, prun, policy.configured(prun.name))
        # a precision nobody configured is judged as the baseline recorded it, never as a new key
        target = prun.target if lowered is None else replace(prun.target, precision=lowered.before)
        entry, note = baseline.entry_for(target)
        if entry is None:
            pv.status = TargetStatus.NO_BASELINE
            pv.reason = (f"no baseline for {prun.name} on device class {prun.target.label}: create it with "
                         f"`{update_cmd} --provider {prun.name}`")
        else:
            pv.reason = note or pv.reason
            pv.baseline_latency_ms = entry.latency_ms
    pv.placement = prun.placement
    pv.capture_peak_mb = None if prun.capture_peak_bytes is None else round(prun.capture_peak_bytes / 2**20, 3)
    labelled = graph_precision.unrealized(run, prun, entry)
    pv.audits = audits(prun, entry, policy) + ([lowered.audit(prun.name)] if lowered is not None else []) + \
        ([labelled] if labelled is not None else [])
    pv.rows = checks.runtime_rows(run, prun, entry, spec, st, dependent)
    return pv


def unrecorded(run: ModelRun, baseline: Baseline | None) -> list[str]:
    """Providers that could not run here and that the baseline has no entry for on any device class:
    nothing here can record them (a GPU provider on a laptop); the check says where they are recorded."""
    if baseline is None:
        return []
    here = [p for p in run.providers if (p.status == RunStatus.SKIPPED and p.skip == SkipKind.UNAVAILABLE)
            or (p.status == RunStatus.ERROR and p.error_status == ErrorStatus.NO_GPU)]
    return list(dict.fromkeys(p.name for p in here if next(baseline.entries_of(p.name), None) is None))


def _first(pv: ProviderVerdict, order: dict[str, int], skip: list[str]) -> Regression | None:
    """The provider's first failing row, not one in ``skip`` (contradictions), with what the value also
    computes on a runtime; else its first failing audit."""
    row = checks.first_failure([r for r in pv.rows if r.layer not in skip], order)
    if row is not None:
        return Regression.of(row, _folded_into(pv.rows, row) if pv.role == Role.RUNTIME else ())
    audit = next((a for a in pv.audits if a.status == AuditStatus.FAIL), None)
    return None if audit is None else Regression("(model)", "", audit.check, message=audit.message)


def _folded_into(rows: list[Row], at: Row) -> tuple[str, ...]:
    """The layers folded into ``at``'s value on this runtime: the folded rows right before it (its
    siblings, or layers inside it), as a Conv is before the BatchNorm whose value the fused node gives."""
    index = next(i for i, r in enumerate(rows) if r is at)
    parent, own = at.layer.rpartition(".")[0], module_of(at.layer)
    out: list[str] = []
    for r in reversed(rows[:index]):
        if r.status != RowStatus.FOLDED:
            break
        if r.layer.rpartition(".")[0] == parent or r.layer.startswith(own + "."):
            out.append(r.layer)
    return tuple(reversed(out))


def _contradiction(pv: ProviderVerdict, skip: list[str], found: causality.Cause) -> Audit:
    """Reference rows that moved before the only change could reach them: reported, never a verdict."""
    more = f" and {len(skip) - 1} more layer{'s' * (len(skip) > 2)}" if len(skip) > 1 else ""
    said = ("it is not named the first regression" if pv.first_regression is not None else
            "nothing moved where it could have, so the contradiction is the finding")
    return Audit(Check.CONTRADICTION, AuditStatus.WARN if pv.first_regression is not None else AuditStatus.FAIL,
                 f"the float64 reference moved at {span(skip[0])}{more} before the change could reach it: {found.words()}; "
                 f"the comparison there contradicts the content key: {said}", layer=skip[0])


def model_verdict(spec: ModelSpec, run: ModelRun, baseline: Baseline | None, path: str, update_cmd: str,
                  policy: Policy = Policy(), comparisons: list[Comparison] | None = None,
                  unmatched: tuple[LayerTolerance, ...] = ()) -> ModelVerdict:
    """``unmatched``: the model's ``layer-tolerances`` rules no case of it matched (``unmatched_rules``)."""
    # A refused baseline is there, and unusable: not a missing one.
    refused = run.error is not None and run.error.error_status == ErrorStatus.BAD_BASELINE
    mv = ModelVerdict(spec.name, error=run.error, update_command=update_cmd, baseline_path=path,
                      baseline_exists=baseline is not None or refused, exporter=run.meta.exporter,
                      export_fallback=run.meta.export_fallback, opset=run.meta.opset,
                      reference_dtype=run.reference_dtype, layers=len(run.layers),
                      promoted=dict(run.meta.promoted or {}), below_float64=dict(run.meta.below_float64 or {}),
                      sweep=spec.sweep.sweep if spec.sweep else None, comparisons=list(comparisons or []),
                      # A model that failed to build, export or run reused and computed nothing worth a line.
                      reuse=None if run.error else run.reuse)
    if baseline is None and not refused:
        mv.status, mv.message = ModelStatus.NO_BASELINE, f"no baseline at {path}: create it with `{update_cmd}`"
    elif baseline is not None:
        mv.versions = version_changes(baseline.meta, run.meta)
    st = checks.layout(run, baseline, spec) if baseline is not None and run.layers else None
    dependent = data_dependent.recognize(run, baseline, st)
    mv.providers = [_reference(run, baseline, spec, mv.message, st, dependent)]
    mv.providers += [_runtime(run, p, baseline, spec, update_cmd, policy, st, dependent) for p in run.providers]
    order = {layer.name: i for i, layer in enumerate(run.layers)}
    _follows(mv, spec, order)
    mv.unrecorded = unrecorded(run, baseline)
    mv.audits = (model_audits.dynamic_shape(spec, run, baseline) + model_audits.training_mode(run)
                 + model_audits.random_draws(run) + model_audits.coverage(run, baseline, st)
                 + model_audits.recorded_as(spec, baseline) + model_audits.layer_tolerances(spec, unmatched)
                 + model_audits.weights_unseen(run, baseline, st, mv.providers)
                 + model_audits.casts(spec, run, baseline, st) + model_audits.output_order(run, baseline, st))
    mv.audits += [Audit(Check.STRUCTURE, AuditStatus.WARN, line) for line in described(st)] if st else []
    mv.mapping = model_audits.mapping(run)
    found = causality.cause(run, baseline, st) if st is not None and baseline is not None else None
    candidates = _targets_first(mv, order, found)
    if baseline is not None:
        _follows_reference(mv.providers[0], run, baseline, order, st.renames if st else {})
    for audit in (a for a in mv.audits if a.status == AuditStatus.FAIL and a.check != Check.CONTRADICTION):
        # What ships does not match the config (its export) or the model as given: before any layer.
        candidates.append((order.get(audit.layer, -1) if audit.layer else -1, 0, audit_regression(audit)))
    for c in (c for c in mv.comparisons if c.status == ComparisonStatus.FAIL):  # after every layer: outputs only
        candidates.append((len(order), 2, comparison_regression(c)))
    if candidates:
        # Earliest layer wins; on a tie the model's own audits, then the reference (a model change)
        # explain the runtimes.
        mv.first_regression = _upstream_gone(min(candidates, key=lambda c: c[:2])[2], st, baseline)
    mv.status = rollup.model_status(mv)
    mv.hints = hints.model_hints(spec, run, baseline, mv, st)  # diagnosis only; never changes the verdict
    return mv


def _follows(mv: ModelVerdict, spec: ModelSpec, order: dict[str, int]) -> None:
    """One cause, one mark (docs/verdict.md#verdict): after the reference moved, a runtime's error growth
    follows the model change unless it also grew past today's float32 ``torch-cpu`` error at that layer.
    The ceiling, NaN/Inf and shapes judge as ever."""
    moved = checks.first_failure(mv.providers[0].rows, order)
    if moved is None:
        return
    at = order.get(moved.layer, len(order))
    yard = next((p for p in mv.providers if p.role == Role.RUNTIME and p.name == REFERENCE_PROVIDER
                 and p.precision == DEFAULT_PRECISION), None)
    today = {r.layer: r.value for r in yard.rows} if yard is not None else {}
    for pv in mv.providers[1:]:
        for i, r in enumerate(pv.rows):
            if r.status != RowStatus.FAIL or r.check != Check.ERROR_GROWTH or order.get(r.layer, -1) < at:
                continue
            tol = spec.tolerance_for(r.layer, pv.precision)
            torch_err = today.get(r.layer)
            explained = (torch_err is not None and r.value is not None  # a NaN error: never explained
                         and r.value <= checks.growth_limit(torch_err, tol.growth, tol.floor, None))
            if pv is not yard and not explained:
                continue  # past what the change explains: a regression of this runtime
            why = "" if pv is yard else f", as {REFERENCE_PROVIDER}'s error {torch_err:.3g} does today"
            base = "" if r.baseline is None else f", baseline {r.baseline:.3g}"
            said = f"follows the model change at {span(moved.layer)} (error {r.value:.3g}{base}{why})"
            pv.rows[i] = replace(r, status=RowStatus.FOLLOWS, message=f"{said}; not a finding of its own")


def _follows_reference(ref: ProviderVerdict, run: ModelRun, baseline: Baseline, order: dict[str, int],
                       renames: dict[str, str]) -> None:
    """One cause, one mark in the reference too: after its first drift, a layer that moved without a cause
    of its own (``causes``) is the nearest cause before it passed on. Where a side did not digest modules
    or tensors, each keeps its mark."""
    found = causes.causes(ref.first_regression, ref.rows, run, baseline, order, renames)
    if found is None:
        return
    starts, at, own = {c.layer for c in found}, found[0].layer, causes.own(found)
    for i, r in enumerate(ref.rows):
        if r.layer in starts:
            at = r.layer
        elif (r.status == RowStatus.FAIL and r.check == Check.REFERENCE_DRIFT
              and order.get(r.layer, -1) > order.get(found[0].layer, len(order))):
            by = own.get(module_of(r.layer), at)
            ref.rows[i] = replace(r, status=RowStatus.FOLLOWS,
                                  message=f"moves with the change at {span(by)}: not a cause of its own")


def audit_regression(audit: Audit) -> Regression:
    """A model audit that failed, as the regression it names: what ships does not match the config (its
    export) or the model as given, or a config rule matches none of its layers."""
    where = "(export)" if audit.check == Check.DYNAMIC_SHAPE else \
        "(config)" if audit.check == Check.LAYER_TOLERANCES else "(model as given)"
    return Regression(audit.layer or "(model)", "", audit.check, message=audit.message, provider=where)


def comparison_regression(c: Comparison) -> Regression:
    """A sweep's comparison that failed, as the regression it names (the outputs)."""
    against = f"case {span(c.other)}" if c.kind == Check.PAIR else f"anchor {span(c.other)}"
    error = f"{c.error:.3g}" if c.error is not None else "an unknown amount"
    return Regression("(model)", "", c.kind, c.error, c.tolerance, f"outputs differ from {against} by {error}",
                      provider=c.provider)


def _targets_first(mv: ModelVerdict, order: dict[str, int],
                   found: causality.Cause | None) -> list[tuple[int, int, Regression]]:
    """Each target's first regression (a reference row that contradicts the only change set apart, as an
    audit), as candidates for the model's: (position, rank, regression)."""
    candidates = []
    for pv in mv.providers:
        skip = causality.contradicted(pv.rows, order, found) if pv.role == Role.REFERENCE else []
        pv.first_regression = _first(pv, order, skip)
        if skip and found is not None:  # only a known cause can be contradicted
            audit = _contradiction(pv, skip, found)
            mv.audits.append(audit)
            if pv.first_regression is None:
                pv.first_regression = Regression(skip[0], "", Check.CONTRADICTION, message=audit.message)
        pv.status = rollup.target_status(pv)
        if pv.first_regression is not None:
            candidates.append((order.get(pv.first_regression.layer, len(order)), 1 + (pv.role != Role.REFERENCE),
                               replace(pv.first_regression, provider=pv.name, precision=pv.precision)))
    return candidates


def _upstream_gone(first: Regression, st: Structure | None, baseline: Baseline | None) -> Regression:
    """The first regression, naming the layers gone since the baseline that ran before it there (a
    value that disappeared and may have fed what moved)."""
    if st is None or not st.gone or baseline is None:
        return first
    order = {x.name: i for i, x in enumerate(baseline.layers)}
    at = order.get(st.recorded(first.layer), len(order))
    before = [n for n in st.gone if order[n] < at]
    if not before:
        return first
    shown = ", ".join(before[:3]) + (", …" if len(before) > 3 else "")
    gone = f"{len(before)} layer{'s' * (len(before) != 1)} before it in the baseline {'is' if len(before) == 1 else 'are'} gone: {shown}"
    return replace(first, message=f"{first.message}; {gone}" if first.message else gone)


def assemble(models: list[ModelVerdict], environment: dict[str, Any]) -> Report:
    """The report: models in configured order; the first model's first regression leads."""
    lead = next((m for m in models if m.first_regression is not None), None)
    first = None if lead is None else Regression(**{**vars(lead.first_regression), "model": lead.name})
    return Report(rollup.verdict(models), models, environment, first)

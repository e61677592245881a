"""What a model that did not pass needs next, decided once from its verdict and carried as a typed field
(``gate.render.next_steps`` words it). A crash gets the command that reproduces it, never ``update-baseline``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from gate.config.types import PRECISION_TOLERANCE, Tolerance
from gate.core.status import (
    AuditStatus,
    Check,
    ErrorStatus,
    KeyPart,
    ModelStatus,
    Role,
    RowStatus,
    StepKind,
    TargetStatus,
)
from gate.verdict.ahead import Ahead
from gate.verdict.causes import Cause
from gate.verdict.types import ModelVerdict, ProviderVerdict

UPGRADE = "pip install -U parity-gate"
# Where recording the new numbers is the fix the user may intend: the only steps that offer `update-baseline`.
RECORDS = frozenset({StepKind.MODEL_CHANGED, StepKind.WEIGHTS_CHANGED, StepKind.NO_BASELINE,
                     StepKind.NO_ENTRY, StepKind.RECORD_ELSEWHERE, StepKind.REFACTORED,
                     StepKind.STALE_BASELINE, StepKind.DYNAMIC_SHAPE})


@dataclass(frozen=True)
class NextStep:
    kind: StepKind
    command: str | None = None  # what to run, where one command is the step
    providers: tuple[str, ...] = ()  # the providers it concerns, first first
    layer: str | None = None  # where the reference moved first, or a precision change hurt first
    error_status: ErrorStatus | None = None  # how the model or provider failed
    checks: tuple[str, ...] = field(default=())  # the audits or limits that failed (RUNTIME_AUDIT, OUTPUT_TOLERANCE)
    # what of the model changed where its float64 reference holds, or beside a baseline's other inputs; None:
    # unknown (no content key was taken, as on the export/collect/report path)
    model: tuple[KeyPart, ...] | None = ()
    ahead: Ahead = Ahead()  # the new or gone layers before ``layer``, or ``layer`` a new or gone model output
    causes: tuple[Cause, ...] = ()  # where the reference moved again by a change of its own, after ``layer``

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "command": self.command,
                **({"providers": list(self.providers)} if self.providers else {}),
                **({"layer": self.layer} if self.layer else {}),
                **({"error_status": self.error_status} if self.error_status else {})}


def reproduce(m: ModelVerdict, provider: str | None = None) -> str:
    """The check of this model alone, with the config its re-record names (``--config`` where not found by
    default)."""
    command = m.recreate.replace(" update-baseline ", " check ", 1)
    return command + (f" --provider {provider}" if provider else "")


def next_step(m: ModelVerdict) -> NextStep | None:
    """None for a model that passed, unless layers moved inside modules whose outputs hold (a refactor
    inside them): re-recording the baseline compares them again."""
    if m.status == ModelStatus.PASS:
        moved = [r.layer for p in m.providers if p.role == Role.REFERENCE for r in p.rows if r.status == RowStatus.MOVED]
        return NextStep(StepKind.REFACTORED, m.recreate, layer=moved[0]) if moved else None
    if m.status == ModelStatus.ERROR:
        return _failed(m)
    if m.status == ModelStatus.NO_BASELINE:
        return _missing(m)
    audit = {a.check: a for a in reversed(m.audits)}
    reference = next((p for p in m.providers
                      if p.role == Role.REFERENCE and p.status == TargetStatus.REGRESSED), None)
    layer = reference.first_regression.layer if reference is not None and reference.first_regression else None
    if Check.LAYER_TOLERANCES in audit:  # first: every other finding was judged by limits not as meant
        return NextStep(StepKind.LAYER_TOLERANCES)
    if Check.TRAINING_MODE in audit and audit[Check.TRAINING_MODE].status == AuditStatus.FAIL:
        return NextStep(StepKind.TRAINING_MODE, None, layer=audit[Check.TRAINING_MODE].layer)
    dead = next((r for p in m.providers for r in p.rows if r.failed and r.check == Check.DEGENERATE), None)
    if dead is not None:  # judged baseline or not: re-recording cannot help
        return NextStep(StepKind.DEGENERATE, None, layer=dead.layer)
    if Check.RANDOM_DRAWS in audit:  # re-recording records one draw: the next differs again
        return NextStep(StepKind.RANDOM_DRAWS, None, layer=layer)
    if reference is not None:
        return _changed(m, reference, layer)
    if Check.CASTS in audit:  # the model's own casts changed: the reference promotes them, what ships moved
        return NextStep(StepKind.MODEL_CHANGED, m.recreate, layer=audit[Check.CASTS].layer,
                        checks=(Check.CASTS,))
    if Check.OUTPUT_ORDER in audit:  # the same outputs in another order: what ships changed
        return NextStep(StepKind.MODEL_CHANGED, m.recreate, layer=audit[Check.OUTPUT_ORDER].layer,
                        checks=(Check.OUTPUT_ORDER,))
    if Check.WEIGHTS_UNSEEN in audit:  # no layer moved: the audit names the tensors
        return NextStep(StepKind.WEIGHTS_CHANGED, m.recreate, checks=(Check.WEIGHTS_UNSEEN,))
    if audit.get(Check.DYNAMIC_SHAPE) is not None and audit[Check.DYNAMIC_SHAPE].status == AuditStatus.FAIL:
        return NextStep(StepKind.DYNAMIC_SHAPE, m.recreate)
    regressed = [p for p in m.providers if p.role == Role.RUNTIME and p.status == TargetStatus.REGRESSED]
    names = tuple(_label(p, m) for p in regressed)
    lowered = [p for p in regressed
               if any(a.check == Check.PRECISION and a.status == AuditStatus.FAIL for a in p.audits)]
    if lowered:  # configure the precision before any baseline records it
        first = lowered[0].first_regression
        return NextStep(StepKind.PRECISION_CHANGED, None, tuple(_label(p, m) for p in lowered),
                        first.layer if first is not None and first.layer != "(model)" else None)
    if regressed and all(p.limits_only for p in regressed):  # the step names the limits that failed
        limits = sorted({str(r.check) for p in regressed for r in p.rows if r.failed})
        if any(map(_unrounded, regressed)):  # far from the model, as recorded: no limit to loosen
            return _artifact_differs(regressed, names) if m.exporter == "artifact" else \
                replace(_artifact_differs(regressed, names), kind=StepKind.GRAPH_DIFFERS)
        return NextStep(StepKind.OUTPUT_TOLERANCE, None, names, checks=tuple(limits))
    # what only the runtimes compute (float32 or export-only code, a fold) can change with the model too
    model = tuple(p for p in m.reuse.changed if p in _MODEL) if m.reuse and m.reuse.key else None
    if regressed and all(p.failed == 0 for p in regressed):
        checks = sorted({a.check for p in regressed for a in p.audits if a.status == AuditStatus.FAIL})
        return NextStep(StepKind.RUNTIME_AUDIT, None, names, checks=tuple(checks), model=model)
    return NextStep(StepKind.RUNTIME_CHANGED, None, names, model=model)  # the hints and tables say where


_MODEL = (KeyPart.CODE, KeyPart.SOURCE, KeyPart.WEIGHTS)


def _label(p: ProviderVerdict, m: ModelVerdict) -> str:
    """A runtime named with its precision where the model runs it in more than one (torch-cpu and
    torch-cpu:bfloat16)."""
    twins = [q for q in m.providers if q.role == Role.RUNTIME and q.name == p.name]
    return f"{p.name}:{p.precision}" if len(twins) > 1 else p.name


def _unrounded(p: ProviderVerdict) -> bool:
    """A ceiling failed by an error over the ceiling its precision has by default: no rounding explains it
    (a ceiling configured under float32's own error is a limit to loosen instead)."""
    top = PRECISION_TOLERANCE.get(p.precision, {}).get("ceiling", Tolerance().ceiling)
    return any(r.failed and r.check == Check.CEILING and (r.value or 0.0) > top for r in p.rows)


def _artifact_differs(regressed: list[ProviderVerdict], names: tuple[str, ...]) -> NextStep:
    first = next((p.first_regression.layer for p in regressed if p.first_regression), None)
    return NextStep(StepKind.ARTIFACT_DIFFERS, None, names, first if first != "(model)" else None)


def _changed(m: ModelVerdict, reference: ProviderVerdict, layer: str | None) -> NextStep:
    # A prebuilt artifact its runtimes now disagree with did not follow the model: re-recording would keep
    # the stale file as the truth. (Rebuilt, its runtimes agree and the change is the model's alone.)
    stale = [p for p in m.providers
             if p.role == Role.RUNTIME and p.status == TargetStatus.REGRESSED and p.failed]
    if m.exporter == "artifact" and stale:
        return _artifact_differs(stale, tuple(_label(p, m) for p in stale))
    # what the model-change hint found changed: ``weights`` (alone), ``code``, or unknown; and what of the
    # structure came before where the reference moved
    evidence = next((h.evidence for h in m.hints if h.kind == "model-change"), {})
    kind = StepKind.WEIGHTS_CHANGED if evidence.get("cause") == "weights" else StepKind.MODEL_CHANGED
    return NextStep(kind, m.recreate, (reference.name,), layer, ahead=Ahead.from_evidence(evidence),
                    causes=Cause.from_evidence(evidence))


def _missing(m: ModelVerdict) -> NextStep:
    missing = [p for p in m.providers if p.status == TargetStatus.NO_BASELINE]
    if not m.baseline_exists and m.restore:  # deleted by the change: recording now would judge nothing
        return _restore(m)
    if not m.baseline_exists and m.moved_from:  # left behind by a moved ``baseline-dir``: likewise
        return NextStep(StepKind.RESTORE, move_command(m))
    if not m.baseline_exists or not missing:
        return NextStep(StepKind.NO_BASELINE, m.recreate)
    first = missing[0]
    return NextStep(StepKind.NO_ENTRY, f"{m.recreate} --provider {first.name}", tuple(p.name for p in missing))


def move_command(m: ModelVerdict) -> str:
    """The command that puts the file a moved ``baseline-dir`` left behind where the config looks."""
    folder = os.path.dirname(m.baseline_path)  # git mv makes no folder
    return f"{f'mkdir -p {folder} && ' if folder else ''}git mv {m.moved_from} {m.baseline_path}"


def _restore(m: ModelVerdict) -> NextStep:
    return NextStep(StepKind.RESTORE, f"git checkout {m.restore} -- {m.baseline_path}",
                    error_status=m.error.error_status if m.error else None)


def _failed(m: ModelVerdict) -> NextStep | None:
    if m.error and m.refused and m.error.newer:  # a newer parity-gate's file: re-recording would drop it
        return NextStep(StepKind.UPGRADE, UPGRADE, error_status=m.error.error_status)
    if m.error and m.refused and m.restore:  # damaged by the change: re-recording would judge nothing
        return _restore(m)
    if m.error and m.refused and m.error.repair:  # damaged or another's: a re-record would take the model
        return NextStep(StepKind.BAD_BASELINE, m.error.repair, error_status=m.error.error_status)
    if m.error and m.refused:  # an older format, other inputs or parameters: the reason says which
        return NextStep(StepKind.STALE_BASELINE, m.recreate, error_status=m.error.error_status,
                        model=m.error.changed)
    if m.error:
        return NextStep(StepKind.MODEL_FAILED, reproduce(m), error_status=m.error.error_status)
    failed = [p for p in m.providers if p.status == TargetStatus.ERROR]
    if not failed:
        return NextStep(StepKind.MODEL_FAILED, reproduce(m))
    moved = next((r for r in m.providers if r.role == Role.REFERENCE and r.status == TargetStatus.REGRESSED
                  and r.first_regression), None)
    # update-baseline refuses while a provider fails: a model change is the step only beside a missing GPU
    blocking = [p for p in failed if p.error_status != ErrorStatus.NO_GPU]
    if moved is not None and moved.first_regression is not None and not blocking:
        return _changed(m, moved, moved.first_regression.layer)
    if any(a.check == Check.DYNAMIC_SHAPE and a.status == AuditStatus.FAIL for a in m.audits):
        return NextStep(StepKind.DYNAMIC_SHAPE, m.recreate)  # a graph kept static fails on the other sizes
    p = (blocking or failed)[0]
    if p.error_status == ErrorStatus.NO_GPU and p.name in m.unrecorded:  # never recorded: no install fixes that here
        return NextStep(StepKind.RECORD_ELSEWHERE, f"{m.recreate} --provider {p.name}", tuple(m.unrecorded),
                        error_status=p.error_status)
    kinds: dict[ErrorStatus | None, StepKind] = {ErrorStatus.NO_GPU: StepKind.NO_GPU,
                                                 ErrorStatus.NO_RESULT: StepKind.NO_RESULT,
                                                 ErrorStatus.LOAD_FAIL: StepKind.LOAD_FAIL}
    kind = kinds.get(p.error_status, StepKind.PROVIDER_FAILED)
    shipped = m.reuse.shipped if m.reuse is not None else None
    if kind == StepKind.LOAD_FAIL and (moved is not None or shipped is not None and shipped.changed):
        kind = StepKind.PROVIDER_FAILED  # a graph changed since the baseline fails to load: the graph's doing
    command = {StepKind.LOAD_FAIL: "parity-gate doctor", StepKind.NO_GPU: None,  # its reason names the package
               StepKind.NO_RESULT: None}.get(kind, reproduce(m, p.name))
    return NextStep(kind, command, (p.name,), error_status=p.error_status)

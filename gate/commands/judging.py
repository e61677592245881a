"""The one judge: runs and their baselines in, one report out. ``check``, ``report`` and their sweeps
all come through ``judge``, so every refusal of a baseline is made once, here (unreadable, of another
format, fingerprint definition or model, recorded for other inputs; a GPU leg that checked no GPU). A
refused baseline fails its own model (``BAD_BASELINE``, exit 2); every other model is judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate import fingerprint
from gate.commands import loosened
from gate.commands.common import display, load_baseline, location, orphaned_baselines, policy, update_command
from gate.config import Config, ModelSpec
from gate.core.progress import Progress
from gate.core.runs import ModelRun, RunError
from gate.core.status import ErrorStatus, KeyPart, ModelStatus
from gate.core.versions import environment
from gate.errors import GateError, LfsPointer, NewerFormat, StaleFormat
from gate.formats.baseline import Baseline
from gate.model.inputs import difference
from gate.verdict.comparisons import compare
from gate.verdict.gpu_leg import fail_missing_gpu
from gate.verdict.hints.change import describe_tensors
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.model_audits import unmatched_rules
from gate.verdict.reexpression import traced_ops_changed
from gate.verdict.tensors import tensor_changes
from gate.verdict.types import Report


@dataclass(frozen=True)
class Loaded:
    """A model's baseline: its path, the baseline (None: there is none yet, or it is refused), and why
    it cannot judge the model (None: it can, or there is none)."""

    path: Path
    baseline: Baseline | None = None
    refused: RunError | None = None


def load_one(config: Config, spec: ModelSpec) -> Loaded:
    """The model's baseline, or why it cannot judge this model at all: of a newer version (upgrade), an
    older one or another fingerprint definition (re-record: ``load_baseline``), or damaged, an LFS pointer
    or another model's (restore it: re-recording would take the model as it is now, faults included)."""
    path = location(config, spec).path
    shown = display(path)
    try:
        _, baseline = load_baseline(config, spec)
    except GateError as exc:  # the next step says how to restore, re-record or read it; the repository's path
        repair = None if isinstance(exc, NewerFormat | StaleFormat) else \
            f"git lfs pull --include {shown}" if isinstance(exc, LfsPointer) else f"git checkout -- {shown}"
        return _refused(path, str(exc).replace(str(path), str(shown)), isinstance(exc, NewerFormat), repair)
    if baseline is not None and baseline.model != spec.name and \
            any(other.name == baseline.model for other in config.models):
        # a model configured as well: never this one renamed
        return _refused(path, f"baseline `{shown}`: holds model `{baseline.model}`, not `{spec.name}`",
                        repair=f"git checkout -- {shown}")
    return Loaded(path, baseline)


def _refused(path: Path, message: str, newer: bool = False, repair: str | None = None) -> Loaded:
    return Loaded(path, None, RunError(ErrorStatus.BAD_BASELINE, message, newer=newer, repair=repair))


def load_baselines(config: Config, specs: tuple[ModelSpec, ...] | list[ModelSpec]) -> dict[str, Loaded]:
    """Every model's baseline, read (and refused if it cannot judge its model) before any model runs."""
    return {spec.name: load_one(config, spec) for spec in specs}


def other_inputs(config: Config, spec: ModelSpec, run: ModelRun, baseline: Baseline,
                 path: str) -> RunError | None:
    """Why ``baseline`` cannot judge ``run``: it was recorded for other inputs than the run was made with."""
    ran = run.error is None or run.unexported  # a failed export still judges the PyTorch side on these inputs
    if not ran or baseline.meta.inputs_digest in (None, run.meta.inputs_digest):
        return None
    how = difference(baseline.meta.inputs, run.meta.inputs or [], spec.inputs)
    # a re-record would also take code or weights changed meanwhile: said, never hidden behind the inputs
    tensors = tensor_changes(baseline.meta.tensor_digests, run.meta.tensor_digests, {})
    changed = tensors.values if tensors is not None else []
    code = _same_signature(baseline, run) and traced_ops_changed(run, baseline)
    said = ["code changed too (the traced float32 forward differs)"] * code + \
        [f"weights changed too ({describe_tensors(changed)})"] * bool(changed)
    them = "them as they are" if changed else "it as it is"
    also = f"; its {', and its '.join(said)}: a re-record takes {them}" if said else ""
    return RunError(ErrorStatus.BAD_BASELINE,
                    f"baseline `{path}`: recorded for other inputs than model `{spec.name}` declares now"
                    f"{f' ({how})' if how else ''}{also}",
                    changed=(KeyPart.CODE,) * code + (KeyPart.WEIGHTS,) * bool(changed))


def _same_signature(baseline: Baseline, run: ModelRun) -> bool:
    """Whether the inputs kept their names, dtypes and shapes: only then is the trace, which holds those but
    not the values, comparable across the change of inputs."""
    def signature(inputs: list[dict[str, Any]] | None) -> list[tuple[Any, ...]]:
        return [(x["name"], x["dtype"], list(x["shape"])) for x in inputs or []]
    return bool(baseline.meta.inputs) and signature(baseline.meta.inputs) == signature(run.meta.inputs)


def judge(config: Config, runs: list[tuple[ModelSpec, ModelRun]], loaded: Mapping[str, Loaded] | None = None,
          progress: Progress = lambda _: None, base: Config | str | None = None) -> Report:
    """Judge each model's run against its baseline (``loaded``, else read now), in the order given; with
    ``base`` (the config at the change's base), say what passes only under the change's config."""
    judged = []
    for spec, run in runs:
        run = fail_missing_gpu(run, config.allow_missing_gpu, config.require)
        one = loaded[spec.name] if loaded is not None else load_one(config, spec)
        baseline, shown = one.baseline, str(display(one.path))
        refused = one.refused
        if refused is None and baseline is not None:
            refused = other_inputs(config, spec, run, baseline, shown)
        if refused is not None:  # judged as the error it is, on nothing of its run
            run, baseline = ModelRun(spec.name, error=refused), None
        judged.append((spec, run, baseline, shown))
    compared = compare(config, {run.name: run for _, run, _, _ in judged})  # a sweep's pairs and anchor
    progress("comparing with the baselines")
    unmatched = unmatched_rules(config.models, {run.name: run for _, run, _, _ in judged})
    verdicts = [model_verdict(spec, run, baseline, shown, update_command(spec, config), policy(config),
                              compared.get(spec.name), unmatched.get(spec.name, ()))
                for spec, run, baseline, shown in judged]
    if base is not None:
        again = {} if isinstance(base, str) else compare(base, {run.name: run for _, run, _, _ in judged})
        loosened.mark(config, base, [(*j, v) for j, v in zip(judged, verdicts, strict=True)], again)
    unowned = [str(display(p)) for p in orphaned_baselines(config)]
    for m in verdicts:  # one of them may be this model's, renamed: compared, never re-recorded blind
        if m.status == ModelStatus.NO_BASELINE and not m.baseline_exists:
            m.unowned = unowned[:8]
    report = assemble(verdicts, environment(fingerprint.backend))
    report.unowned = unowned or None  # nothing checks them: the comment says so, as the console does
    if isinstance(base, Config):
        report.unchecked = loosened.unchecked(config, base)
    return report

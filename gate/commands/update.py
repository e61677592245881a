"""``update-baseline``: run here (or read other runners' result files) and rewrite the baselines.

Every model runs the whole path (no reuse) before anything is written, so a model that fails leaves
every baseline as it was. A failed export records what ran without a graph and fails the command
(``Updated.unexported``). Each file is rewritten under its folder's lock after a fresh read, so a
concurrent update of other providers is kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from gate import fingerprint
from gate.commands.common import display, location, result_paths
from gate.config import Config, LayerTolerance, ModelSpec, ProviderSpec
from gate.core.failure import ModelError
from gate.core.layers import is_output
from gate.core.runs import ModelRun, RunError
from gate.core.status import Check, ErrorStatus, RunStatus
from gate.errors import FormatError, GateError, StaleFormat
from gate.formats.baseline import Baseline, describe, merge_run, store
from gate.formats.baseline.sets import read_set
from gate.formats.results import merge, read_runs
from gate.pipeline.prepare import Memo
from gate.pipeline.run import Progress, Settings, run_model
from gate.pipeline.stages import ReusePolicy
from gate.verdict import data_dependent, graph_precision, model_audits
from gate.verdict.checks import degenerate, outputs_of, runtime_rows
from gate.verdict.drift import drift


@dataclass
class Updated:
    model: str
    path: Path
    changes: list[str]
    warnings: list[str]
    error: str | None = None  # a model or case that could not run: its baseline is left as it was
    error_status: ErrorStatus | None = None  # how it failed
    unexported: RunError | None = None  # the export failed: written without ONNX Runtime entries of this run


def _from_files(config: Config, models: tuple[ModelSpec, ...], sources: list[Path]
                ) -> tuple[tuple[ModelSpec, ...], dict[str, ModelRun]]:
    """(models to update, their runs) from result files: every selected model, or, when all
    models were selected, those the files hold."""
    runs = {r.name: r for r in merge([run for p in result_paths(sources) for run in read_runs(p)])}
    missing = [s.name for s in models if s.name not in runs]
    if missing and len(models) == len(config.models) and len(missing) < len(models):
        models = tuple(s for s in models if s.name in runs)
    elif missing:
        raise GateError(f"the result files hold no run of model `{missing[0]}`")
    return models, runs


def cost(seconds: float) -> float:
    """A recorded cost: two significant digits (0.01 s at least), since only ratios between models matter."""
    return max(float(f"{seconds:.2g}"), 0.01)


WARNED_ROWS = 3  # per runtime, in execution order: the first is where to look


def warnings_for(spec: ModelSpec, run: ModelRun, unmatched: tuple[LayerTolerance, ...] = ()) -> list[str]:
    """What ``check`` will fail on even against the new baseline (said, not refused): the verdict's
    own rows of each runtime judged with no entry (per-layer and per-precision tolerances included)
    fail only where no baseline can help: a ceiling, a shape, a non-finite value, allclose. A
    data-dependent layer is held to its own rule; of its rules only ``detections`` ignores the
    entry (the new entry records the rest, which the ``recorded`` rule then holds it to). ``unmatched``:
    its ``layer-tolerances`` rules that match no layer (``model_audits.unmatched_rules``)."""
    out = [f"{p.name}: {p.reason or p.status}" for p in run.providers if p.status != "ok"]
    out += [f"{a.message}; `check` will fail until this is fixed" for p in run.providers
            if (a := graph_precision.unrealized(run, p)) is not None]
    out += [f"{a.message}; `check` will fail until this is fixed"
            for a in model_audits.layer_tolerances(spec, unmatched)]
    dependent = data_dependent.recognize(run)
    for prun in run.providers:
        if prun.status != "ok":
            continue
        rows = runtime_rows(run, prun, None, spec, dependent={n: h for n, h in dependent.items() if n in prun.layers})
        failing = [r for r in rows if r.failed and (r.check == Check.DETECTIONS or r.layer not in dependent)]
        out += [f"{prun.name}: {r.layer} ({r.check}): {r.message}; `check` will fail until this is fixed"
                for r in failing[:WARNED_ROWS]]
        if len(failing) > WARNED_ROWS:
            out.append(f"{prun.name}: and {len(failing) - WARNED_ROWS} more layers `check` will fail on")
    outputs = outputs_of(run)
    dead = [f"{x.name}: {why}" for x in run.layers if is_output(x.name)
            for why in [degenerate(x.fp, outputs)] if why]
    return out + [f"output {d}: `check` will fail on this model" for d in dead]


def _refuse_partial(config: Config, models: tuple[ModelSpec, ...]) -> None:
    """A sweep's set file that cannot be read is started anew by the cases updated: where only some of its
    cases are, the others' numbers would be lost unsaid. Refused (an older format holds nothing usable)."""
    chosen, cases = {m.name for m in models}, dict[Path, set[str]]()
    for spec in config.models:
        loc = location(config, spec)
        if loc.case is not None:
            cases.setdefault(loc.path, set()).add(spec.name)
    for path, names in cases.items():
        if not names & chosen or names <= chosen or not path.exists():
            continue
        try:
            read_set(path)
        except StaleFormat:
            continue
        except FormatError as exc:
            raise FormatError(f"{exc}; updating {len(names & chosen)} of its {len(names)} cases would drop "
                              f"the others: restore the file, or update them all") from None


def _ready(run: ModelRun) -> ModelRun:
    """The run, unless the model or a provider failed: nothing is written then. A failed export
    alone is no such failure: the rows it left unrun are the only ones not recorded."""
    if run.error and not run.unexported:
        raise ModelError(run.error.message, run.error.error_status)
    unrun = ErrorStatus.EXPORT_FAIL if run.unexported else None
    failed = next((p for p in run.providers if p.status == RunStatus.ERROR and p.error_status != unrun), None)
    if failed is not None:
        # A provider's reason names the model already (its runner's or worker's message).
        raise ModelError(failed.reason or f"model `{run.name}`: {failed.target.provider} failed",
                         failed.error_status or ErrorStatus.INFER_FAIL)
    return run


def update_baseline(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
                    progress: Progress = lambda _: None, sources: list[Path] | None = None,
                    calibrate: bool = False, settings: Settings | None = None) -> list[Updated]:
    """Run (or, with ``sources``, read result files from other runners) and rewrite the baselines."""
    if calibrate and sources:
        raise GateError("--calibrate reruns the models here; it does not apply to --from result files")
    settings = replace(settings or Settings.from_env(), latency=True)  # the baseline records it
    runs: dict[str, ModelRun] = {}
    if sources:
        models, runs = _from_files(config, models, sources)
    ready, failed, memo = [], [], Memo.of(models)
    for spec in models:  # before any run: a bad name, a file a newer parity-gate wrote (never replaced)
        store.refuse_newer(location(config, spec))
    _refuse_partial(config, models)
    for spec in models:
        try:
            started = time.perf_counter()
            run = _ready(runs[spec.name] if sources else run_model(config, spec, providers, progress, settings, memo,
                                                                   ReusePolicy.for_update().plan(None)))
            if not sources:  # what --shard balances by; result files say nothing of how long the model took
                run.meta.seconds = cost(time.perf_counter() - started)
        except ModelError as exc:  # one model that cannot run never holds back the others: each its own file
            error = f"{exc} (at {exc.where})" if exc.where else str(exc)
            failed.append(Updated(spec.name, display(location(config, spec).path), [], [], error, exc.error_status))
            continue
        if calibrate:
            calibrate_noise(config, spec, providers, run, progress, settings)
        ready.append((spec, run))
    unmatched = model_audits.unmatched_rules(config.models, {run.name: run for _, run in ready})
    return [_write(config, spec, run, warnings_for(spec, run, unmatched.get(spec.name, ())))
            for spec, run in ready] + failed


def _write(config: Config, spec: ModelSpec, run: ModelRun, warnings: list[str]) -> Updated:
    loc = location(config, spec)
    made: list[Baseline] = []

    def make(previous: Baseline | None) -> Baseline:
        data_dependent.mark(run, previous)  # recorded on the layers: how each was known to depend on values
        made.append(merge_run(run, previous))
        return made[0]

    # Fingerprints of another definition: nothing of such a baseline can be kept.
    previous = store.update(loc, make, lambda b: b.meta.fingerprint == fingerprint.parameters())
    return Updated(spec.name, display(loc.path), describe(previous, made[0]), warnings,
                   unexported=run.error if run.unexported else None)


def calibrate_noise(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...], run: ModelRun,
                    progress: Progress, settings: Settings) -> None:
    """Rerun with another thread count (1, or 2 when already pinned to 1) and record, per layer,
    how much the reference and each runtime's error moved: thresholds never go below that."""
    other = Settings(threads=2 if settings.threads == 1 else 1)
    progress(f"{spec.name}: calibrating run-to-run noise (threads={other.threads})")
    rerun = _ready(run_model(config, spec, providers, progress, other))
    again = {x.name: x.fp for x in rerun.layers}
    for layer in run.layers:
        fp = again.get(layer.name)
        if fp is not None and tuple(fp.shape) == tuple(layer.fp.shape):
            layer.noise = drift(fp, layer.fp).value  # in the measure its reference-drift limit pads
    for prun in run.providers:
        other_run = rerun.provider(prun.target)
        for name, pl in prun.layers.items():
            o = other_run.layers.get(name) if other_run else None
            if pl.err is not None and o is not None and o.err is not None:
                pl.noise = abs(o.err - pl.err)

"""The one judge: runs and their baselines in, one report out.

``check`` (runs made here), ``report`` (runs read from every runner's result files) and the sweeps
among their models all come through ``judge``, so every refusal is made once, here: a baseline of
another format or fingerprint definition, of another model, or recorded for other inputs than the
model declares now; and a GPU leg that checked no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gate.commands.common import display, environment, load_baseline, policy, update_command
from gate.config import Config, ModelSpec
from gate.core.progress import Progress
from gate.core.runs import ModelRun
from gate.errors import GateError
from gate.formats.baseline import Baseline
from gate.model.inputs import difference
from gate.verdict.comparisons import compare
from gate.verdict.gpu_leg import fail_missing_gpu
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.types import Report

Loaded = tuple[Path, Baseline | None]  # a baseline's path, and the baseline (None: there is none yet)


def load_one(config: Config, spec: ModelSpec) -> Loaded:
    """The model's baseline; GateError when it cannot judge this model at all: unreadable, of
    another fingerprint definition (``load_baseline``), or holding another model."""
    path, baseline = load_baseline(config, spec)
    if baseline is not None and baseline.model != spec.name:
        raise GateError(f"baseline `{display(path)}`: holds model `{baseline.model}`, not `{spec.name}`; re-create it "
                        f"with `{update_command(spec, config)}`")
    return path, baseline


def load_baselines(config: Config, specs: tuple[ModelSpec, ...] | list[ModelSpec]) -> dict[str, Loaded]:
    """Every model's baseline, read (and refused if it cannot judge its model) before any model runs."""
    return {spec.name: load_one(config, spec) for spec in specs}


def refuse_other_inputs(config: Config, spec: ModelSpec, run: ModelRun, baseline: Baseline, path: str) -> None:
    """GateError when ``baseline`` was recorded for other inputs than the run was made with."""
    ran = run.error is None or run.unexported  # a failed export still judges the PyTorch side on these inputs
    if ran and baseline.meta.inputs_digest not in (None, run.meta.inputs_digest):
        how = difference(baseline.meta.inputs, run.meta.inputs or [])
        raise GateError(f"baseline `{path}`: recorded for other inputs than model `{spec.name}` declares now"
                        f"{f' ({how})' if how else ''}; re-create it with `{update_command(spec, config)}`")


def judge(config: Config, runs: list[tuple[ModelSpec, ModelRun]], loaded: Mapping[str, Loaded] | None = None,
          progress: Progress = lambda _: None) -> Report:
    """Judge each model's run against its baseline (``loaded``, else read now), in the order given."""
    judged = []
    for spec, run in runs:
        run = fail_missing_gpu(run, config.allow_missing_gpu, config.require)
        path, baseline = loaded[spec.name] if loaded is not None else load_one(config, spec)
        shown = str(display(path))
        if baseline is not None:
            refuse_other_inputs(config, spec, run, baseline, shown)
        judged.append((spec, run, baseline, shown))
    compared = compare(config, {run.name: run for _, run, _, _ in judged})  # a sweep's pairs and anchor
    progress("comparing with the baselines")
    return assemble([model_verdict(spec, run, baseline, shown, update_command(spec, config), policy(config),
                                   compared.get(spec.name)) for spec, run, baseline, shown in judged], environment())

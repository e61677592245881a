"""``check``: run the models here, judge them against their baselines, one report."""

from __future__ import annotations

from gate.commands.common import display, environment, load_baseline, policy, update_command
from gate.commands.pipeline import Progress, Settings, run_model
from gate.commands.prepare import Cache
from gate.config import Config, ModelSpec, ProviderSpec
from gate.core.runs import ModelRun, RunError
from gate.errors import GateError, ModelError
from gate.verdict.comparisons import compare
from gate.verdict.gpu_leg import fail_missing_gpu
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.types import Report


def _run(config: Config, spec: ModelSpec, providers, progress: Progress, settings: Settings | None,
         cache: Cache) -> ModelRun:
    try:
        return run_model(config, spec, providers, progress, settings, cache)
    except ModelError as exc:
        return ModelRun(spec.name, error=RunError(exc.status, str(exc)))


def check(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
          progress: Progress = lambda _: None, settings: Settings | None = None) -> Report:
    done, cache = [], Cache()
    for spec in models:
        path, baseline = load_baseline(config, spec)
        run = fail_missing_gpu(_run(config, spec, providers, progress, settings, cache), config.allow_missing_gpu,
                               config.require)
        if baseline is not None and not run.error and baseline.meta.inputs_digest not in (None,
                                                                                           run.meta.inputs_digest):
            raise GateError(f"baseline `{path}`: recorded for other inputs than model `{spec.name}` declares now; "
                            f"re-create it with `{update_command(spec, config)}`")
        done.append((spec, run, baseline, path))
    compared = compare(config, {run.name: run for _, run, _, _ in done})  # a sweep's pairs and anchor
    progress("comparing with the baselines")
    return assemble([model_verdict(spec, run, baseline, str(display(path)), update_command(spec, config),
                                   policy(config), compared.get(spec.name)) for spec, run, baseline, path in done],
                    environment())

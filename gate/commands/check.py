"""``check``: run the models here, judge them against their baselines, one report."""

from __future__ import annotations

from gate.commands.common import display, environment, load_baseline, policy, update_command
from gate.commands.pipeline import Progress, Settings, run_model
from gate.commands.prepare import Cache
from gate.config import Config, ModelSpec, ProviderSpec
from gate.core.runs import ModelRun, RunError
from gate.errors import GateError, ModelError
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
    verdicts, cache = [], Cache()
    for spec in models:
        path, baseline = load_baseline(config, spec)
        run = _run(config, spec, providers, progress, settings, cache)
        if baseline is not None and not run.error and baseline.meta.inputs_digest not in (None,
                                                                                           run.meta.inputs_digest):
            raise GateError(f"baseline `{path}`: recorded for other inputs than model `{spec.name}` declares now; "
                            f"re-create it with `{update_command(spec, config)}`")
        progress(f"{spec.name}: comparing with the baseline")
        verdicts.append(model_verdict(spec, run, baseline, str(display(path)), update_command(spec, config),
                                      policy(config)))
    return assemble(verdicts, environment())

"""``check``: run the models here, judge them against their baselines, one report."""

from __future__ import annotations

from gate.commands.judging import judge, load_baselines
from gate.commands.pipeline import Progress, Settings, run_model
from gate.commands.prepare import Cache
from gate.config import Config, ModelSpec, ProviderSpec
from gate.core.runs import ModelRun, RunError
from gate.errors import ModelError
from gate.verdict.types import Report


def _run(config: Config, spec: ModelSpec, providers, progress: Progress, settings: Settings | None,
         cache: Cache) -> ModelRun:
    try:
        return run_model(config, spec, providers, progress, settings, cache)
    except ModelError as exc:
        return ModelRun(spec.name, error=RunError.of(exc))


def check(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
          progress: Progress = lambda _: None, settings: Settings | None = None) -> Report:
    loaded = load_baselines(config, models)  # an unreadable baseline fails before any model runs
    cache = Cache()
    runs = [(spec, _run(config, spec, providers, progress, settings, cache)) for spec in models]
    return judge(config, runs, loaded, progress)

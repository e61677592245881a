"""``check``: run the models here, judge them against their baselines, one report. What each stage's
key vouches for comes from the baseline and the store (``stages``) unless ``full``, or unless the change
under check rewrote that baseline (``rewritten``: keys written beside the numbers vouch for nothing)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gate.commands.judging import Loaded, judge, load_baselines
from gate.config import Config, ModelSpec, ProviderSpec
from gate.core.failure import ModelError
from gate.core.runs import ModelRun, RunError
from gate.core.status import ErrorStatus
from gate.pipeline.alarms import reference_alarms
from gate.pipeline.prepare import Memo
from gate.pipeline.run import Progress, Settings, run_model
from gate.pipeline.stages import ReusePolicy
from gate.verdict.types import Report


def _run(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...], progress: Progress,
         settings: Settings | None, memo: Memo, loaded: Loaded, policy: ReusePolicy,
         rewritten: frozenset[Path]) -> ModelRun:
    if loaded.refused is not None:  # its baseline cannot judge it: nothing to run it for
        return ModelRun(spec.name, error=loaded.refused)
    plan = policy.plan(loaded.baseline, loaded.path.resolve() in rewritten)
    try:
        return run_model(config, spec, providers, progress, settings, memo, plan)
    except ModelError as exc:
        return ModelRun(spec.name, error=RunError.of(exc))
    except SystemExit as exc:  # its own code called sys.exit: a failure of this model, never the verdict
        return ModelRun(spec.name, error=RunError.of(ModelError.of(
            f"model `{spec.name}`: its code raised SystemExit({exc.code!r})", ErrorStatus.INFER_FAIL, exc)))


def check(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
          progress: Progress = lambda _: None, settings: Settings | None = None, full: bool = False,
          rewritten: frozenset[Path] = frozenset(), base: Config | str | None = None) -> Report:
    """``rewritten``: the baseline files (resolved paths) the change under check rewrote; ``base``: the
    config at its base (``gate.commands.loosened``)."""
    loaded = load_baselines(config, models)  # a model whose baseline is refused is not run, the others are
    if isinstance(base, Config) and base.max_slowdown is not None:  # judged under the base's, timed for it
        settings = replace(settings or Settings.from_env(), latency=True)
    memo, policy = Memo.of(models), ReusePolicy.for_check(full)
    runs = [(spec, _run(config, spec, providers, progress, settings, memo, loaded[spec.name], policy,
                        rewritten)) for spec in models]
    report = judge(config, runs, loaded, progress, base)
    baselines = [loaded[spec.name].baseline for spec, _ in runs]
    reference_alarms(report.models, [run for _, run in runs], baselines, policy.store)
    return report

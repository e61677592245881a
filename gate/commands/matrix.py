"""The matrix flow: ``export`` once (the torch side), ``collect`` on each runner (ONNX Runtime
only, no torch), ``report`` over every runner's result files: one verdict."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

from gate.commands.common import result_paths
from gate.commands.judging import judge, load_baselines
from gate.config import Config, Isolation, ModelSpec, ProviderSpec
from gate.core.failure import ModelError
from gate.core.runs import ModelRun, ProviderRun, RunError
from gate.core.status import ErrorStatus, SkipKind
from gate.errors import GateError
from gate.formats.baseline import baseline_path
from gate.formats.results import RUN, Bundle, merge, read_runs, write_runs
from gate.pipeline.prepare import Memo, prepare
from gate.pipeline.run import Progress, Settings, is_isolated, run_provider, run_providers, torch_threads
from gate.runners.base import Subject
from gate.runners.registry import nominal_target
from gate.verdict.types import Report


def export_models(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...], out: Path,
                  progress: Progress = lambda _: None, settings: Settings | None = None) -> list[ModelRun]:
    """``export --out DIR``: per model a bundle ``DIR/<model>/`` with the ONNX graph, the inputs and
    a result file holding the reference and the PyTorch providers' fingerprints. A model that fails to
    build goes into its bundle as that failure, as ``check`` reports it: the models after it are exported."""
    settings = settings or Settings.from_env()
    runs, memo = [], Memo()
    for spec in models:
        folder = baseline_path(out, spec.name).with_suffix("").with_suffix("")  # a validated name, inside out
        bundle = Bundle(folder)
        with torch_threads(settings.threads):
            try:
                prepared = prepare(config, spec, progress, memo)
            except ModelError as exc:
                failed = ModelRun(spec.name, error=RunError.of(exc))
                bundle.write(failed)
                runs.append(failed)
                continue
            bundle.write(prepared.run, prepared.model_file, prepared.inputs, prepared.outputs)
            if prepared.run.layers:
                torch_side = tuple(p for p in providers if p.kind.torch)
                run_providers(prepared, bundle, torch_side, config, progress, settings)
                bundle.write_run(prepared.run)
        runs.append(prepared.run)
    return runs


def collect(source: Path, providers: tuple[ProviderSpec, ...], out: Path, isolation: Isolation | None = None,
            models: list[str] | None = None, progress: Progress = lambda _: None,
            settings: Settings | None = None, config: Config | None = None) -> list[ModelRun]:
    """``collect --from DIR``: run ONNX Runtime providers on exported bundles, without torch. The
    PyTorch providers' results the export recorded travel on in this runner's result file."""
    isolation = isolation or Isolation()
    settings = settings or Settings.from_env()
    if not source.is_dir():
        raise GateError(f"`{source}` is not a folder written by `parity-gate export --out DIR`"
                        + ("" if source.exists() else " (it does not exist)"))
    folders = sorted(p.parent for p in source.glob(f"*/{RUN}"))
    if not folders:
        raise GateError(f"`{source}` holds no exported model (expected <model>/{RUN} from "
                        "`parity-gate export --out DIR`)")
    bundles = [(bundle, bundle.read_run()) for bundle in map(Bundle, folders)]
    for pattern in models or []:  # a name that selects nothing is a usage error, as in `check` and `export`
        if not any(fnmatchcase(run.name, pattern) for _, run in bundles):
            raise GateError(f"`{source}` holds no exported model matching `{pattern}` (exported: "
                            f"{', '.join(run.name for _, run in bundles[:8])})")
    collected = []
    for bundle, run in bundles:
        if models and not any(fnmatchcase(run.name, pattern) for pattern in models):
            continue
        spec = next((m for m in config.models if m.name == run.name), None) if config else None
        subject = Subject(run, bundle.folder, threads=settings.threads, outputs=bundle.outputs(),
                          output_tolerance=tuple(run.meta.output_tolerance) if run.meta.output_tolerance else None,
                          repeats=spec.repeats if spec else None,
                          latency=settings.times(config), detail=progress)
        for provider in providers:
            if provider.kind.torch:
                continue
            skip = config.skip_reason(run.name, provider.name) if config else None
            if skip:
                run.providers.append(ProviderRun.skipped(nominal_target(provider), skip, SkipKind.SWEEP))
                continue
            progress(f"{run.name}: {provider.name}")
            run.providers.append(run_provider(provider, subject, isolation, is_isolated(provider, isolation)))
        collected.append(run)
    write_runs(out, collected)
    return collected


def unrun_reason(provider: str) -> str:
    """Why a required provider that no result file holds fails the report, naming its leg."""
    return (f"{provider} is required, but no result file holds it: the matrix leg that runs {provider} failed, was "
            "skipped or uploaded nothing")


def _with_unrun(run: ModelRun, config: Config) -> ModelRun:
    """Configured providers that no result file holds are skips, never silent passes; a required one
    (``require``, ``--require``) is an error: its leg failed or uploaded nothing, and nothing checked it."""
    have = {p.name for p in run.providers}
    for provider in config.providers:
        if provider.name in have or run.error:
            continue
        target, reason = nominal_target(provider), config.skip_reason(run.name, provider.name)
        if reason:
            run.providers.append(ProviderRun.skipped(target, reason, SkipKind.SWEEP))
        elif provider.name in config.require:
            run.providers.append(ProviderRun.failed(target, ErrorStatus.NO_RESULT, unrun_reason(provider.name)))
        else:
            reason = f"skipped: no result file holds {provider.name} (its runner did not run or was skipped)"
            run.providers.append(ProviderRun.skipped(target, reason, SkipKind.UNRUN))
    return run


def _once(paths: list[Path]) -> list[Path]:
    """The result files, each named once: a file named twice (itself, or in a folder named too) is a
    mistake in the command line that would read its results twice."""
    seen: dict[Path, Path] = {}
    for path in paths:
        if path.resolve() in seen:
            raise GateError(f"result file `{path}` is named twice (also as `{seen[path.resolve()]}`): name "
                            "each runner's file once")
        seen[path.resolve()] = path
    return paths


def report_files(config: Config, files: list[Path], progress: Progress = lambda _: None,
                 base: Config | str | None = None) -> Report:
    """``report FILE|DIR ...``: merge result files from several runners into one verdict (``base``: the
    config at the change's base, ``gate.commands.loosened``)."""
    by_name = {r.name: r for r in merge([run for p in _once(result_paths(files)) for run in read_runs(p)])}
    unknown = sorted(set(by_name) - {s.name for s in config.models})
    if unknown:
        raise GateError(f"result files hold model `{unknown[0]}`, which {config.path} does not configure")
    loaded = load_baselines(config, config.models)
    missing = "no result file holds model `{}` (did its export or collect job run?)"
    runs = [(spec, _with_unrun(by_name.get(spec.name) or ModelRun(spec.name, error=RunError(
        ErrorStatus.NO_RESULT, missing.format(spec.name))), config)) for spec in config.models]
    return judge(config, runs, loaded, progress, base)

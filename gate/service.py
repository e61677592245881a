"""The commands, as library calls: ``check`` and ``update_baseline``. The CLI renders what
these return; nothing here prints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gate.baseline import baseline_path, read_baseline, write_baseline
from gate.compare import verdict
from gate.config import Config, ModelSpec, ProviderSpec
from gate.errors import FormatError, GateError, ModelError
from gate.pipeline import Progress, run_model, versions
from gate.runs import ModelRun
from gate.snapshot import describe_changes, to_document


def _backend() -> str:
    from gate import fingerprint

    return fingerprint.backend


def _run(config: Config, spec: ModelSpec, providers, progress: Progress) -> ModelRun:
    try:
        return run_model(config, spec, providers, progress)
    except ModelError as exc:
        return ModelRun(spec.name, error={"status": exc.status, "message": str(exc)})


def update_command(spec: ModelSpec, config: Config) -> str:
    return f"parity-gate update-baseline --model {spec.name}" + (
        f" --config {config.path}" if config.path.name not in ("pyproject.toml", "parity-gate.toml") else "")


def check(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
          progress: Progress = lambda _: None) -> dict:
    reports = []
    for spec in models:
        path = baseline_path(config.baseline_dir, spec.name)
        try:
            baseline = read_baseline(path)
        except FileNotFoundError:
            baseline = None
        run = _run(config, spec, providers, progress)
        if baseline is not None and not run.error and baseline.get("meta", {}).get("inputs_digest") not in (
                None, run.meta.get("inputs_digest")):
            raise GateError(f"baseline `{path}`: recorded for other inputs than model `{spec.name}` declares now; "
                            f"re-create it with `{update_command(spec, config)}`")
        reports.append(verdict.model_report(spec, run, baseline, _display(path), update_command(spec, config)))
    return verdict.assemble(reports, verdict.environment(versions(), _backend()))


def _display(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


@dataclass
class Updated:
    model: str
    path: Path
    changes: list[str]
    warnings: list[str]


def update_baseline(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
                    progress: Progress = lambda _: None) -> list[Updated]:
    """Run and rewrite the baselines; a model that fails to export or run aborts before anything is written."""
    plans = []
    for spec in models:
        path = baseline_path(config.baseline_dir, spec.name)
        try:
            previous = read_baseline(path)
        except FileNotFoundError:
            previous = None
        except FormatError:
            previous = None  # unreadable: it is being replaced
        run = run_model(config, spec, providers, progress)
        if run.error:
            raise ModelError(run.error["message"], run.error["status"])
        warnings = [f"{p.name}: {p.reason or p.status}" for p in run.providers if p.status != "ok"]
        for prun in run.providers:
            worst = max((layer.err for layer in prun.layers.values() if layer.err is not None), default=None)
            ceiling = spec.tolerance.ceiling
            if worst is not None and worst > ceiling:
                warnings.append(f"{prun.name}: error against the reference reaches {worst:.3g} (ceiling "
                                f"{ceiling:.3g}); `check` will fail until this is fixed")
        doc = to_document(run, previous)
        plans.append((spec, path, previous, doc, warnings))
    updated = []
    for spec, path, previous, doc, warnings in plans:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_baseline(path, doc)
        updated.append(Updated(spec.name, _display(path), describe_changes(previous, doc), warnings))
    return updated

"""The commands, as library calls: ``check`` and ``update_baseline``. The CLI renders what
these return; nothing here prints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gate.baseline import baseline_lock, baseline_path, read_baseline, write_baseline
from gate.compare import verdict
from gate.compare.checks import degenerate
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


def baseline_changes(config: Config, since: str) -> list[str]:
    """Baseline files this change touches (``git diff --name-only SINCE -- <baseline-dir>``),
    for the report's "this PR changes baselines" line. Empty when git cannot tell."""
    import subprocess

    try:
        proc = subprocess.run(["git", "diff", "--name-only", since, "--", str(config.baseline_dir)],
                              cwd=config.root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    return sorted(line for line in proc.stdout.splitlines() if line.endswith(".msgpack.zst"))


def _check_comparable(baseline: dict, path: Path, spec: ModelSpec, config: Config) -> None:
    """Fingerprints taken with another sketch width, seed or quantile set cannot be compared."""
    from gate.pipeline import fingerprint_meta

    recorded, current = baseline["meta"]["fingerprint"], fingerprint_meta()
    if recorded != current:
        diff = next(k for k in current if recorded.get(k) != current[k])
        raise GateError(f"baseline `{path}`: fingerprints were taken with another {diff.replace('_', ' ')} "
                        f"({recorded.get(diff)} vs {current[diff]} here); re-create it with "
                        f"`{update_command(spec, config)}`")


def update_command(spec: ModelSpec, config: Config) -> str:
    return f"parity-gate update-baseline --model {spec.name}" + (
        f" --config {config.path}" if config.path.name not in ("pyproject.toml", "parity-gate.toml") else "")


def _baseline(config: Config, spec: ModelSpec, replacing: bool = False) -> tuple[Path, dict | None]:
    """The model's baseline path and document (None when missing; also when unreadable and
    about to be replaced)."""
    path = baseline_path(config.baseline_dir, spec.name)
    try:
        return path, read_baseline(path)
    except FileNotFoundError:
        return path, None
    except FormatError:
        if replacing:
            return path, None
        raise


def check(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...],
          progress: Progress = lambda _: None) -> dict:
    reports = []
    for spec in models:
        path, baseline = _baseline(config, spec)
        if baseline is not None:
            _check_comparable(baseline, path, spec, config)
        run = _run(config, spec, providers, progress)
        if baseline is not None and not run.error and baseline.get("meta", {}).get("inputs_digest") not in (
                None, run.meta.get("inputs_digest")):
            raise GateError(f"baseline `{path}`: recorded for other inputs than model `{spec.name}` declares now; "
                            f"re-create it with `{update_command(spec, config)}`")
        reports.append(verdict.model_report(spec, run, baseline, _display(path), update_command(spec, config),
                                            policy(config)))
    return verdict.assemble(reports, verdict.environment(versions(), _backend()))


def policy(config: Config) -> verdict.Policy:
    return verdict.Policy(config.placement, config.max_slowdown, config.require)


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
                    progress: Progress = lambda _: None, sources: list[Path] | None = None,
                    calibrate: bool = False) -> list[Updated]:
    """Run (or, with ``sources``, read result files from other runners) and rewrite the baselines.

    A model that fails to export or run aborts before anything is written.
    """
    runs: dict[str, ModelRun] = {}
    if sources:
        from gate.runfile import merge, read_runs

        runs = {r.name: r for r in merge([run for p in _result_paths(sources) for run in read_runs(p)])}
        missing = [s.name for s in models if s.name not in runs]
        if missing and len(models) == len(config.models) and len(missing) < len(models):
            models = tuple(s for s in models if s.name in runs)  # update what the files hold
        elif missing:
            raise GateError(f"the result files hold no run of model `{missing[0]}`")
    plans = []
    runs_by_name: dict[str, ModelRun] = {}
    for spec in models:
        path, previous = _baseline(config, spec, replacing=True)
        run = runs[spec.name] if sources else run_model(config, spec, providers, progress)
        if run.error:
            raise ModelError(run.error["message"], run.error["status"])
        if calibrate:
            if sources:
                raise GateError("--calibrate reruns the models here; it does not apply to --from result files")
            calibrate_noise(config, spec, providers, run, progress)
        failed = [p for p in run.providers if p.status == "error"]
        if failed:
            raise ModelError(f"model `{spec.name}`: {failed[0].reason}", failed[0].error_status or "INFER_FAIL")
        warnings = [f"{p.name}: {p.reason or p.status}" for p in run.providers if p.status != "ok"]
        for prun in run.providers:
            worst = max((layer.err for layer in prun.layers.values() if layer.err is not None), default=None)
            ceiling = spec.tolerance.ceiling
            if worst is not None and worst > ceiling:
                warnings.append(f"{prun.name}: error against the reference reaches {worst:.3g} (ceiling "
                                f"{ceiling:.3g}); `check` will fail until this is fixed")
        dead = [f"{x.name}: {why}" for x in run.layers if x.name.startswith("(model)")
                for why in [degenerate(x.fp)] if why]
        warnings.extend(f"output {d}: `check` will fail on this model" for d in dead)
        runs_by_name[spec.name] = run
        plans.append((spec, path, previous, None, warnings))
    updated = []
    for spec, path, _seen, doc, warnings in plans:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Re-read under the lock: a concurrent update of other providers must not be lost.
        with baseline_lock(path):
            try:
                previous = read_baseline(path)
            except (FileNotFoundError, FormatError):
                previous = None
            doc = to_document(runs_by_name[spec.name], previous)
            write_baseline(path, doc)
        updated.append(Updated(spec.name, _display(path), describe_changes(previous, doc), warnings))
    return updated


def calibrate_noise(config: Config, spec: ModelSpec, providers, run: ModelRun, progress: Progress) -> None:
    """Rerun with another thread count (1, or 2 when already pinned to 1) and record, per layer,
    how much the reference and each runtime's error moved: thresholds never go below that."""
    import os

    import torch

    from gate.fingerprint import relative_error

    before, torch_threads = os.environ.get("PARITY_GATE_THREADS"), torch.get_num_threads()
    os.environ["PARITY_GATE_THREADS"] = "2" if before == "1" else "1"
    try:
        progress(f"{spec.name}: calibrating run-to-run noise (threads={os.environ['PARITY_GATE_THREADS']})")
        rerun = run_model(config, spec, providers, progress)
    finally:
        if before is None:
            os.environ.pop("PARITY_GATE_THREADS", None)
        else:
            os.environ["PARITY_GATE_THREADS"] = before
        torch.set_num_threads(torch_threads)
    if rerun.error:
        raise ModelError(rerun.error["message"], rerun.error["status"])
    again = {x.name: x.fp for x in rerun.layers}
    for layer in run.layers:
        other = again.get(layer.name)
        if other is not None and tuple(other.shape) == tuple(layer.fp.shape):
            layer.noise = relative_error(other, layer.fp)
    reruns = {(p.name, p.device): p for p in rerun.providers}
    for prun in run.providers:
        other_run = reruns.get((prun.name, prun.device))
        for name, pl in prun.layers.items():
            other = other_run.layers.get(name) if other_run else None
            if pl.err is not None and other is not None and other.err is not None:
                pl.noise = abs(other.err - pl.err)


def _result_paths(files: list[Path]) -> list[Path]:
    paths: list[Path] = []
    for f in files:
        if f.is_dir():
            found = sorted(f.glob("*/run.msgpack.zst")) + sorted(f.glob("*.msgpack.zst"))
            if not found:
                raise GateError(f"`{f}` holds no result files")
            paths.extend(found)
        else:
            paths.append(f)
    return paths


def export_models(config: Config, models: tuple[ModelSpec, ...], providers: tuple[ProviderSpec, ...], out: Path,
                  progress: Progress = lambda _: None) -> list[ModelRun]:
    """``export --out DIR``: per model ``DIR/<model>/`` with the ONNX graph, the inputs and a result
    file holding the reference and the torch providers' fingerprints."""
    from gate.collect import write_bundle
    from gate.pipeline import prepare
    from gate.runfile import write_runs

    runs = []
    for spec in models:
        prepared = prepare(config, spec, providers, progress)
        folder = baseline_path(out, spec.name).with_suffix("").with_suffix("")  # validated name, inside out
        if prepared.proto_bytes is not None:
            write_bundle(folder, prepared.proto_bytes, prepared.inputs)
        folder.mkdir(parents=True, exist_ok=True)
        write_runs(folder / "run.msgpack.zst", [prepared.run])
        runs.append(prepared.run)
    return runs


def collect(source: Path, providers: tuple[ProviderSpec, ...], out: Path, isolation=None,
            models: list[str] | None = None, progress: Progress = lambda _: None) -> list[ModelRun]:
    """``collect --from DIR``: run ONNX Runtime providers on exported bundles, without torch."""
    from gate.config import Isolation
    from gate.pipeline import Prepared, run_ort_providers
    from gate.runfile import read_runs, write_runs

    folders = sorted(p.parent for p in source.glob("*/run.msgpack.zst"))
    if not folders:
        raise GateError(f"`{source}` holds no exported model (expected <model>/run.msgpack.zst from "
                        "`parity-gate export --out DIR`)")
    collected = []
    for folder in folders:
        (exported,) = read_runs(folder / "run.msgpack.zst")
        if models and exported.name not in models:
            continue
        # The torch providers export recorded travel with this runner's result: one file per leg.
        prepared = Prepared(exported, None, [])
        run_ort_providers(prepared, folder, providers, isolation or Isolation(), progress)
        collected.append(prepared.run)
    write_runs(out, collected)
    return collected


def report_files(config: Config, files: list[Path], progress: Progress = lambda _: None) -> dict:
    """``report FILE|DIR ...``: merge result files from several runners into one verdict."""
    from gate import device
    from gate.runfile import merge, read_runs
    from gate.runs import ProviderRun

    runs = merge([run for p in _result_paths(files) for run in read_runs(p)])
    by_name = {r.name: r for r in runs}
    reports = []
    for spec in config.models:
        run = by_name.get(spec.name)
        if run is None:  # configured but in no file: never a silent pass
            run = ModelRun(spec.name, error={"status": "NO_RESULT", "message": f"no result file holds model "
                                             f"`{spec.name}` (did its export or collect job run?)"})
        have = {p.name for p in run.providers}
        for provider in config.providers:
            if provider.name not in have and not run.error:
                run.providers.append(ProviderRun(provider.name, provider.precision, device.device_class(provider.name),
                                                 "skipped", f"skipped: no result file holds {provider.name} "
                                                 "(its runner did not run or was skipped)"))
        path, baseline = _baseline(config, spec)
        reports.append(verdict.model_report(spec, run, baseline, _display(path), update_command(spec, config),
                                            policy(config)))
    unknown = sorted(set(by_name) - {s.name for s in config.models})
    if unknown:
        raise GateError(f"result files hold model `{unknown[0]}`, which {config.path} does not configure")
    return verdict.assemble(reports, verdict.environment(versions(), _backend()))

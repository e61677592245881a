"""A GPU leg that checks nothing fails: a run whose configured GPU providers were all unavailable where
they ran is an error naming the fix, unless ``allow-missing-gpu`` says it is expected. Providers no
result file holds (a leg that did not run) are not "unavailable here".
"""

from __future__ import annotations

from gate.config.providers import fix_for, is_gpu
from gate.core.runs import ModelRun, ProviderRun
from gate.core.status import ErrorStatus, RunStatus, SkipKind


def missing_gpu(runs: list[ProviderRun]) -> list[str]:
    """The GPU providers of ``runs`` when every one of them was skipped as unavailable ([] else)."""
    # A sweep's own skip is a decision and an unrun leg ran nowhere: neither is an unavailable runtime.
    gpu = [p for p in runs if is_gpu(p.name) and p.skip not in (SkipKind.SWEEP, SkipKind.UNRUN)]
    if not gpu or any(p.status != RunStatus.SKIPPED for p in gpu):
        return []
    return list(dict.fromkeys(p.name for p in gpu))


def message(names: list[str]) -> str:
    fixes = "; ".join(dict.fromkeys(f"{n}: install {fix_for(n)}" for n in names))
    return (f"no GPU provider could run here ({', '.join(names)} not available), so this run checked no GPU. "
            f"{fixes}. Run `parity-gate doctor` on the runner; if this job is not meant to have a GPU, select its "
            "providers (--provider) or set allow-missing-gpu = true")


def fail_missing_gpu(run: ModelRun, allow: bool, required: tuple[str, ...] = ()) -> ModelRun:
    """``run`` with its GPU providers turned into errors when all were unavailable (in place).
    Providers in ``required`` keep their skip: the verdict fails them with its own message."""
    names = [] if allow else missing_gpu(run.providers)
    if names:
        reason = message(names)
        for i, p in enumerate(run.providers):
            if p.name in names and p.name not in required:
                run.providers[i] = ProviderRun.failed(p.target, ErrorStatus.NO_GPU, reason)
    return run

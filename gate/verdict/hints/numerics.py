"""PyTorch numerics settings (TF32, cuDNN, matmul precision) that differ from the baseline's. Only flags
recorded on both sides are compared: a torch release that adds a setting is not a change.
"""

from __future__ import annotations

from gate.core.device import is_gpu_class
from gate.verdict.hints.context import Context
from gate.verdict.types import ProviderVerdict

CUDA_ONLY = ("torch.backends.cuda.", "torch.backends.cudnn.")  # no effect on a CPU provider


def changes(ctx: Context, pv: ProviderVerdict) -> tuple[dict[str, tuple[str, str]], str]:
    """Flag -> (baseline, now) for the settings of ``pv``'s run that differ from its baseline
    entry's, and the text that names them (``flag baseline -> now; ...``)."""
    prun = ctx.prun(pv)
    entry = ctx.baseline.entry_for(prun.target)[0] if prun is not None and prun.numerics else None
    if prun is None or not prun.numerics or entry is None or not entry.numerics:
        return {}, ""
    before = entry.numerics
    changed = {k: (before[k], v) for k, v in sorted(prun.numerics.items()) if k in before and before[k] != v}
    on_cpu = not is_gpu_class(prun.target.device_class)
    return changed, "; ".join(f"{flag} {was} -> {now}" + (" (no effect on CPU)" if on_cpu and
                                                           flag.startswith(CUDA_ONLY) else "")
                              for flag, (was, now) in changed.items())


def evidence(changed: dict[str, tuple[str, str]]) -> dict[str, dict[str, str]]:
    return {flag: {"baseline": was, "now": now} for flag, (was, now) in changed.items()}

"""What the change under check does to the config that judges it (``check --changed-since``): each model
that passes is judged again, on the same run and baseline, under the config at the base. Where it fails
there, it passes only under limits the change loosened (a tolerance raised, a layer rule added, a
slowdown allowed); a provider the base checks and the change dropped goes unchecked. Both are said on the
model (``ModelVerdict.loosened``), never taken silently; the verdict stays the change's own."""

from __future__ import annotations

import subprocess

from gate.commands.common import policy, update_command
from gate.config import Config, ModelSpec, load_config
from gate.core.runs import ModelRun
from gate.core.status import ModelStatus
from gate.errors import ConfigError
from gate.formats.baseline import Baseline
from gate.verdict.judge import model_verdict
from gate.verdict.types import Loosened, ModelVerdict


def base_config(config: Config, since: str) -> Config | None:
    """The config file as it is at ``since``; None where it is not there or does not load (a new config
    judges by its own limits: nothing was loosened)."""
    try:
        proc = subprocess.run(["git", "show", f"{since}:./{config.path.name}"], cwd=config.path.parent,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    try:
        return load_config(config.path, proc.stdout.decode("utf-8"))
    except (ConfigError, UnicodeDecodeError):
        return None


# spec, run, baseline, the baseline's path, verdict
Judged = tuple[ModelSpec, ModelRun, Baseline | None, str, ModelVerdict]


def mark(config: Config, base: Config, judged: list[Judged]) -> None:
    """Set ``loosened`` on each model whose judgment the change's config loosened."""
    specs = {spec.name: spec for spec in base.models}
    dropped = tuple(p.name for p in base.providers if p.name not in {q.name for q in config.providers})
    for spec, run, baseline, path, verdict in judged:
        was = specs.get(spec.name)
        if verdict.status != ModelStatus.PASS or was is None:
            continue
        first = None
        if (was, policy(base)) != (spec, policy(config)):
            again = model_verdict(was, run, baseline, path, update_command(spec, config), policy(base))
            first = again.first_regression if again.status == ModelStatus.REGRESSED else None
        if first is not None or dropped:
            verdict.loosened = Loosened(first, dropped)

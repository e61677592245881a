"""The models of one shard of a matrix (``check --shard K/N``, ``list --shard``, ``cache key --shard``):
units as configured, weighed by the seconds their baselines record (``meta.seconds``; the median where
none is recorded), assigned by ``gate.config.shards``, so every leg cuts alike on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gate.commands.common import location, read_located
from gate.config import Config, ModelSpec, ProviderSpec
from gate.config.shards import Shard, assign, default_cost
from gate.errors import GateError
from gate.formats.baseline import Baseline
from gate.verdict.shard import ShardRun


def unit_of(spec: ModelSpec) -> str:
    """What stays in one shard: a sweep's cases (its pairs compare them), a configured model's cases
    (they share an export)."""
    return f"sweep:{spec.sweep.sweep}" if spec.sweep is not None else f"model:{spec.base or spec.name}"


@dataclass(frozen=True)
class ShardPlan:
    shard: Shard
    models: tuple[ModelSpec, ...]  # this shard's cases, in configured order
    covered: tuple[str, ...]  # every selected case, all shards together, in configured order
    loads: tuple[float, ...]  # per shard (from 1): the seconds its units record, estimated where not
    units: int  # configured models and sweeps selected
    held: int  # of them, in this shard
    estimated: int  # units weighed, for some case, by the default cost

    @property
    def run(self) -> ShardRun:
        """What the leg's share says it covered (``update-baseline --shard``)."""
        return ShardRun(self.shard, self.covered)

    def checked(self, providers: tuple[ProviderSpec, ...]) -> ShardRun:
        """What the leg's report says it covered (``Report.shard``): the cases, and the providers it ran them
        on, which every leg must share (a leg run on fewer would pass what it left out)."""
        return ShardRun(self.shard, self.covered, tuple(sorted(f"{p.name}:{p.precision}" for p in providers)))


def _recorded(config: Config, models: tuple[ModelSpec, ...]) -> dict[str, float | None]:
    """Each case's recorded seconds (None: no baseline, none recorded, or a baseline that does not read;
    ``check`` says what is wrong with it, in the leg that runs the model)."""
    out: dict[str, float | None] = {}
    sets: dict[Path, dict[str, Baseline]] = {}  # a sweep's set file, read once for all its cases
    for spec in models:
        try:
            baseline: Baseline | None = read_located(location(config, spec), sets)
        except (FileNotFoundError, GateError):
            baseline = None
        out[spec.name] = baseline.meta.seconds if baseline is not None else None
    return out


def plan(config: Config, models: tuple[ModelSpec, ...], shard: Shard) -> ShardPlan:
    """``shard``'s part of ``models`` (a selection of ``config``'s models)."""
    recorded = _recorded(config, models)
    fallback = default_cost([s for s in recorded.values() if s is not None])
    costs: dict[str, float] = {}
    estimated: set[str] = set()
    for spec in models:
        unit, seconds = unit_of(spec), recorded[spec.name]
        if seconds is None:
            estimated.add(unit)
        costs[unit] = costs.get(unit, 0.0) + (fallback if seconds is None else seconds)
    where = assign(costs, shard.count) if costs else {}
    loads = [0.0] * shard.count
    for unit, cost in costs.items():
        loads[where[unit] - 1] += cost
    mine = tuple(spec for spec in models if where[unit_of(spec)] == shard.index)
    held = sum(1 for unit in costs if where[unit] == shard.index)
    return ShardPlan(shard, mine, tuple(spec.name for spec in models), tuple(loads), len(costs), held, len(estimated))

"""One report from the legs of a sharded run (``parity-gate merge``): the report one job checking every
model would have written (models in configured order, the verdict and the first regression decided over
all of them, by ``assemble``).

The legs ran the pull request's code: each was read as any untrusted report, and here each is held to
what the run covers. Every leg is of the same N, one per shard, every leg lists the same models, and
each model is judged by exactly one leg. Anything else is refused with one line naming the model and
the legs (exit 2): a leg cannot hide a model by leaving it out, nor choose its verdict by judging it a
second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.errors import GateError
from gate.verdict.judge import assemble
from gate.verdict.shard import ShardRun
from gate.verdict.types import ModelVerdict, Report

MAX_NAMED = 4  # legs a refusal names before "…"


@dataclass(frozen=True)
class Leg:
    name: str  # where the report came from (an artifact, a file): what a refusal names
    report: Report

    @property
    def run(self) -> ShardRun:
        assert self.report.shard is not None  # merge() refuses a report without one first
        return self.report.shard

    @property
    def label(self) -> str:
        return f"shard {self.run.shard} (`{self.name}`)"


def _legs(legs: list[Leg], count: int) -> list[Leg]:
    """The legs in shard order, one per shard, all cut into ``count``."""
    by_index: dict[int, Leg] = {}
    for leg in legs:
        if leg.report.shard is None:
            raise GateError(f"`{leg.name}`: not the report of a shard (`check --shard K/N` writes `shard`)")
        if leg.run.shard.count != count:
            raise GateError(f"{leg.label}: a leg of {leg.run.shard.count} shards; this merge expects {count}")
        other = by_index.setdefault(leg.run.shard.index, leg)
        if other is not leg:
            raise GateError(f"shard {leg.run.shard} has two reports: `{other.name}` and `{leg.name}`")
    return [by_index[k] for k in sorted(by_index)]


def _named(legs: list[Leg]) -> str:
    shown = ", ".join(leg.label for leg in legs[:MAX_NAMED])
    return shown + (f" and {len(legs) - MAX_NAMED} more" if len(legs) > MAX_NAMED else "")


def _same_list(first: Leg, leg: Leg) -> None:
    if leg.run.covered == first.run.covered:
        return
    mine, theirs = set(leg.run.covered), set(first.run.covered)
    extra = next((n for n in leg.run.covered if n not in theirs), None)
    if extra is not None:
        raise GateError(f"model `{extra}` is covered by {leg.label} but not by {first.label}: the legs ran other configs")
    gone = next((n for n in first.run.covered if n not in mine), None)
    if gone is not None:
        raise GateError(f"model `{gone}` is covered by {first.label} but not by {leg.label}: the legs ran other configs")
    raise GateError(f"{first.label} and {leg.label} list the models in another order: the legs ran other configs")


def _judged(legs: list[Leg], covered: tuple[str, ...]) -> dict[str, ModelVerdict]:
    """Each covered model's verdict, from the one leg that judged it."""
    known = set(covered)
    by_model: dict[str, tuple[Leg, ModelVerdict]] = {}
    for leg in legs:
        for model in leg.report.models:
            if model.name not in known:
                raise GateError(f"{leg.label} judged model `{model.name}`, which is not among the {len(covered)} "
                                "models the run covers")
            prior = by_model.setdefault(model.name, (leg, model))
            if prior[1] is not model:
                raise GateError(f"model `{model.name}` checked twice: by {prior[0].label} and {leg.label}")
    missing = [name for name in covered if name not in by_model]
    if missing:
        count = legs[0].run.shard.count
        absent = [k for k in range(1, count + 1) if k not in {leg.run.shard.index for leg in legs}]
        why = (f"no report from shard{'s' * (len(absent) > 1)} {', '.join(f'{k}/{count}' for k in absent)}" if absent
               else "no leg's report holds it")
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise GateError(f"model `{missing[0]}`{more} was checked by no leg: {why} (merged: {_named(legs)})")
    return {name: verdict for name, (_, verdict) in by_model.items()}


def merge(legs: list[Leg], count: int) -> Report:
    """The legs' reports as one; GateError (exit 2) for a merge that would hide or double a model."""
    if not legs:
        raise GateError(f"no report of any of the {count} shards to merge")
    legs = _legs(legs, count)
    for leg in legs[1:]:
        _same_list(legs[0], leg)
    covered = legs[0].run.covered
    judged = _judged(legs, covered)
    first = legs[0].report
    merged = assemble([judged[name] for name in covered], first.environment)
    changes = [r.baseline_changes for r in (leg.report for leg in legs) if r.baseline_changes is not None]
    merged.baseline_changes = sorted(set().union(*changes)) if changes else None
    diffs = {path: diff for leg in legs for path, diff in (leg.report.baseline_diffs or {}).items()}
    merged.baseline_diffs = diffs or None
    return merged

"""One report from the legs of a sharded run (``parity-gate merge``), as one job checking every model
would have written it. The legs ran the pull request's code, so ``cover`` holds them to the run: same N,
same models, each model judged by exactly one leg; else one line naming the model and legs (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.errors import GateError
from gate.verdict.judge import assemble
from gate.verdict.shard import ShardRun
from gate.verdict.types import Report

MAX_NAMED = 4  # legs a refusal names before "…"


@dataclass(frozen=True)
class Part:
    """A leg as the coverage rule sees it: where it came from, the shard it says it ran (and every model the
    whole run covers), and the models it did (judged, or recorded)."""

    name: str  # where it came from (an artifact, a file): what a refusal names
    run: ShardRun
    done: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"shard {self.run.shard} (`{self.name}`)"


@dataclass(frozen=True)
class Leg:
    name: str  # where the report came from (an artifact, a file): what a refusal names
    report: Report

    @property
    def run(self) -> ShardRun:
        assert self.report.shard is not None  # merge() refuses a report without one first
        return self.report.shard

    @property
    def part(self) -> Part:
        return Part(self.name, self.run, tuple(m.name for m in self.report.models))


def _in_order(parts: list[Part], count: int, thing: str) -> list[Part]:
    """The parts in shard order, one per shard, all cut into ``count``."""
    by_index: dict[int, Part] = {}
    for part in parts:
        if part.run.shard.count != count:
            raise GateError(f"{part.label}: a leg of {part.run.shard.count} shards; this merge expects {count}")
        other = by_index.setdefault(part.run.shard.index, part)
        if other is not part:
            raise GateError(f"shard {part.run.shard} has two {thing}s: `{other.name}` and `{part.name}`")
    return [by_index[k] for k in sorted(by_index)]


def _named(parts: list[Part]) -> str:
    shown = ", ".join(part.label for part in parts[:MAX_NAMED])
    return shown + (f" and {len(parts) - MAX_NAMED} more" if len(parts) > MAX_NAMED else "")


def _same_list(first: Part, part: Part) -> None:
    if set(part.run.providers) != set(first.run.providers):  # a leg on fewer providers checked less
        ran = [", ".join(p.run.providers) or "no provider list" for p in (first, part)]
        raise GateError(f"{first.label} ran {ran[0]} and {part.label} ran {ran[1]}: the legs ran other "
                        "configs")
    if part.run.covered == first.run.covered:
        return
    for one, other in ((part, first), (first, part)):
        known = set(other.run.covered)
        extra = next((n for n in one.run.covered if n not in known), None)
        if extra is not None:
            raise GateError(f"model `{extra}` is covered by {one.label} but not by {other.label}: "
                            "the legs ran other configs")
    raise GateError(f"{first.label} and {part.label} list the models in another order: the legs ran other configs")


def cover(parts: list[Part], count: int, verb: str = "checked", thing: str = "report") -> dict[str, Part]:
    """The one part that did each model the run covers, in configured order; GateError (exit 2) for a
    leg of another cut or another list, two legs of one shard, and a model no leg or two legs did
    (``verb``: what a leg does to a model; ``thing``: what a leg hands on)."""
    if not parts:
        raise GateError(f"no {thing} of any of the {count} shards to merge")
    parts = _in_order(parts, count, thing)
    for part in parts[1:]:
        _same_list(parts[0], part)
    covered = parts[0].run.covered
    known = set(covered)
    by_model: dict[str, Part] = {}
    for part in parts:
        seen: set[str] = set()
        for name in part.done:
            if name not in known:
                raise GateError(f"{part.label} {verb} model `{name}`, which is not among the {len(covered)} "
                                "models the run covers")
            prior = by_model.setdefault(name, part)
            if prior is not part or name in seen:
                raise GateError(f"model `{name}` {verb} twice: by {prior.label} and {part.label}")
            seen.add(name)
    missing = [name for name in covered if name not in by_model]
    if missing:
        absent = [k for k in range(1, count + 1) if k not in {part.run.shard.index for part in parts}]
        why = (f"no {thing} from shard{'s' * (len(absent) > 1)} {', '.join(f'{k}/{count}' for k in absent)}" if absent
               else f"no leg's {thing} holds it")
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise GateError(f"model `{missing[0]}`{more} was {verb} by no leg: {why} (merged: {_named(parts)})")
    return {name: by_model[name] for name in covered}


def merge(legs: list[Leg], count: int) -> Report:
    """The legs' reports as one; GateError (exit 2) for a merge that would hide or double a model."""
    bare = next((leg for leg in legs if leg.report.shard is None), None)
    if bare is not None:
        raise GateError(f"`{bare.name}`: not the report of a shard (`check --shard K/N` writes `shard`)")
    parts = [leg.part for leg in legs]
    done = cover(parts, count)
    judged = {m.name: m for leg, part in zip(legs, parts, strict=True) for m in leg.report.models
              if done[m.name] is part}
    legs = sorted(legs, key=lambda leg: leg.run.shard)
    merged = assemble([judged[name] for name in done], legs[0].report.environment)
    changes = [r.baseline_changes for r in (leg.report for leg in legs) if r.baseline_changes is not None]
    merged.baseline_changes = sorted(set().union(*changes)) if changes else None
    merged.unchecked = sorted(set().union(*(leg.report.unchecked or () for leg in legs))) or None
    diffs = {path: diff for leg in legs for path, diff in (leg.report.baseline_diffs or {}).items()}
    merged.baseline_diffs = diffs or None
    loosened = set().union(*(leg.report.baseline_loosened or () for leg in legs))
    merged.baseline_loosened = sorted(loosened) or None
    dropped = set().union(*(leg.report.baseline_dropped or () for leg in legs))
    merged.baseline_dropped = sorted(dropped) or None
    merged.unowned = sorted(set().union(*(leg.report.unowned or () for leg in legs))) or None
    return merged

"""Which leg of a CI matrix checks which model: ``--shard K/N``.

The unit is a configured model, or a sweep, with every case. Units are laid end to end in the order of
a hash of their names, each as long as its recorded cost; the line is cut into N equal lengths and a
unit belongs to the piece holding its middle. Every leg computes the same assignment from names and
costs alone, each piece holds 1/N of the cost to within the costliest unit, and adding a unit moves
only units near a cut, each to the next piece (tests/unit/test_shards.py measures it).
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from gate.errors import ConfigError

MAX_SHARDS = 256
MIN_COST = 0.01  # seconds: a unit recorded as free still has a middle of its own
_SPEC = re.compile(r"\s*([0-9]{1,6})\s*/\s*([0-9]{1,6})\s*\Z")


@dataclass(frozen=True, order=True)
class Shard:
    """Shard ``index`` (from 1) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ConfigError(f"{self}: the number of shards must be 1 to {MAX_SHARDS}")
        if not 1 <= self.index <= self.count:
            raise ConfigError(f"{self}: shard {self.index} of {self.count} does not exist (1 to {self.count})")

    @classmethod
    def parse(cls, text: str, where: str = "--shard") -> Shard:
        """``K/N`` as a user writes it; ConfigError naming ``where`` otherwise."""
        m = _SPEC.match(text)
        if m is None:
            raise ConfigError(f"{where} {text.strip()[:40]!r}: expected K/N, shard K of N (e.g. 2/4)")
        try:
            return cls(int(m[1]), int(m[2]))
        except ConfigError as e:
            raise ConfigError(f"{where} {e}") from None

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def assign(costs: Mapping[str, float], count: int) -> dict[str, int]:
    """Each unit's shard (from 1), by the rule above; ``costs`` in seconds."""
    order = sorted(costs, key=lambda unit: (hashlib.sha256(unit.encode()).digest(), unit))
    lengths = [max(float(costs[unit]), MIN_COST) for unit in order]
    total = sum(lengths)
    out, start = {}, 0.0
    for unit, length in zip(order, lengths, strict=True):
        middle = start + length / 2
        out[unit] = min(count, int(middle * count / total) + 1)
        start += length
    return out


def default_cost(recorded: list[float]) -> float:
    """The weight of a unit whose baselines record no cost: the median of those that do (1 s when none
    do, which balances by count)."""
    return statistics.median(recorded) if recorded else 1.0

"""What a leg of a sharded run says it covered (the report's ``shard``): its shard, every case the whole
run covers, all legs together, in configured order, and the providers it ran. The merge
(``gate.verdict.merge``) holds the legs to it: the same lists in every leg, each case judged by exactly
one of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.config.shards import MAX_SHARDS, Shard
from gate.core.fields import Obj
from gate.core.names import model_name_problem

MAX_CASES = 100_000


@dataclass(frozen=True)
class ShardRun:
    shard: Shard
    covered: tuple[str, ...]
    providers: tuple[str, ...] = ()  # what the leg ran each case on (name:precision), sorted

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.shard.index, "count": self.shard.count, "models": list(self.covered),
                **({"providers": list(self.providers)} if self.providers else {})}

    @classmethod
    def from_dict(cls, o: Obj) -> ShardRun:
        count = _within(o, "count", MAX_SHARDS, str(MAX_SHARDS))
        index = _within(o, "index", count, f"count ({count})")
        names = o.strs("models")
        if len(names) > MAX_CASES:
            o.fail("models", f"lists {len(names):,} models (limit {MAX_CASES:,})")
        seen: set[str] = set()
        for i, name in enumerate(names):
            problem = model_name_problem(name)
            if problem:
                o.fail(f"models[{i}]", f"not a model name: it {problem}")
            if name in seen:
                o.fail(f"models[{i}]", f"names model `{name}` twice")
            seen.add(name)
        return cls(Shard(index, count), tuple(names), tuple(o.strs("providers")[:256]))


def _within(o: Obj, key: str, top: int, said: str) -> int:
    """The integer at ``key``, from 1 to ``top`` (``said`` names the bound in the error)."""
    value = o.int(key)
    if value is None or not 1 <= value <= top:
        o.fail(key, f"expected an integer from 1 to {said}, got {value!r}")
        raise AssertionError("Obj.fail raises")  # for the type checker: the value is an int below
    return value

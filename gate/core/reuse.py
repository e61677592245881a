"""What a run took from before instead of computing it, and why: plain data, carried from the
run to the report (``models[].reuse``). The decision is made once, in ``gate.commands.reuse``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.core.status import CacheState, FullWhy, KeyPart


@dataclass
class Reuse:
    """``reference``: the float64 reference's fingerprints are the baseline's (no float64 run);
    ``why`` says why not. ``cache``: where the shipped graph came from. ``changed`` and ``details``
    name the parts of the content key that differ from the baseline's, and what moved in them."""

    key: str | None  # this run's content key (None: none could be taken)
    reference: bool = False
    cache: CacheState = CacheState.OFF
    why: FullWhy | None = None  # None exactly when ``reference``
    changed: list[KeyPart] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    cache_note: str | None = None  # why an entry was not used (what failed its checks)
    outputs: bool = True  # the float64 outputs were at hand: exact output metrics measured
    unseen: list[str] = field(default_factory=list)  # operations the key sees by name only (custom ops)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "reference": self.reference, "cache": self.cache, "why": self.why,
                               "changed": list(self.changed), "details": list(self.details),
                               "outputs": self.outputs}
        if self.cache_note:
            out["cache_note"] = self.cache_note
        if self.unseen:
            out["unseen"] = list(self.unseen)
        return out

    @classmethod
    def from_dict(cls, o) -> Reuse:
        """From a report (``gate.formats.fields.Obj``); words this version does not know are refused."""
        return cls(key=o.opt_str("key"), reference=o.bool("reference"), cache=o.word("cache", CacheState),
                   why=o.opt_word("why", FullWhy), changed=[KeyPart(w) for w in _words(o, "changed", KeyPart)],
                   details=o.strs("details"), cache_note=o.opt_str("cache_note"),
                   outputs=o.bool("outputs") if o.has("outputs") else True, unseen=o.strs("unseen"))


def _words(o, key: str, vocabulary) -> list[str]:
    words = o.strs(key)
    for w in words:
        if w not in vocabulary.values():
            o.fail(key, f"{w!r} is not one of {', '.join(vocabulary.values())}")
    return words

"""``Baseline``: a validated baseline document as types.

The codec (``codec.py``) checks a file against the schema and returns its document; this
module turns that document into a ``Baseline`` once, and everything downstream (the verdict,
the hints, ``update-baseline``) works on the types. ``entry_for`` holds the one rule for which
entry judges a target.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gate.core.runs import Meta
from gate.core.target import Target
from gate.fingerprint import Fingerprint


@dataclass(frozen=True)
class BaselineLayer:
    """A layer of the recorded reference, in execution order."""

    name: str
    type: str
    fp: Fingerprint
    noise: float | None = None  # run-to-run change measured by `update-baseline --calibrate`
    reached: str = "float64"  # the coarsest precision the reference computed in up to this layer


@dataclass(frozen=True)
class EntryLayer:
    """A layer as a runtime recorded it: its error against the reference of the time."""

    status: str  # "ok" | "folded" | "absent"
    err: float | None = None
    fp: Fingerprint | None = None
    noise: float | None = None


@dataclass(frozen=True)
class Entry:
    """What one target recorded."""

    target: Target
    latency_ms: float | None = None
    placement: dict[str, Any] | None = None
    layers: dict[str, EntryLayer] = field(default_factory=dict)
    session_options: dict[str, Any] | None = None
    numerics: dict[str, str] | None = None  # PyTorch's TF32/cuDNN/matmul-precision settings (torch providers)


@dataclass(frozen=True)
class Baseline:
    model: str
    meta: Meta
    reference_dtype: str
    layers: tuple[BaselineLayer, ...]
    entries: tuple[Entry, ...]

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Baseline:
        """The types of a document the schema has validated (``codec.decode_document``)."""
        layers = tuple(BaselineLayer(x["name"], x["type"], Fingerprint.from_dict(x["fp"]), x.get("noise"),
                                     x.get("reached", "float64")) for x in doc["layers"])
        entries = []
        for provider, classes in doc["providers"].items():
            for label, e in classes.items():
                target = Target.parse(provider, label)
                rows = {name: EntryLayer(r["status"], r["err"], None if r["fp"] is None else Fingerprint.from_dict(r["fp"]),
                                         r.get("noise"))
                        for name, r in e["layers"].items()}
                entries.append(Entry(target, e.get("latency_ms"), e.get("placement"), rows, e.get("session_options"),
                                     e.get("numerics")))
        return cls(doc["model"], Meta.from_dict(doc["meta"]), doc["reference"]["dtype"], layers, tuple(entries))

    def layer(self, name: str) -> BaselineLayer | None:
        return self._by_name.get(name)

    @property
    def _by_name(self) -> dict[str, BaselineLayer]:
        cached = self.__dict__.get("_layer_index")
        if cached is None:
            cached = {x.name: x for x in self.layers}
            object.__setattr__(self, "_layer_index", cached)
        return cached

    def entries_of(self, provider: str) -> Iterator[Entry]:
        return (e for e in self.entries if e.target.provider == provider)

    def entry_for(self, target: Target) -> tuple[Entry | None, str | None]:
        """The entry that judges ``target``: its own; else, for a CPU class, one of the same
        architecture and precision (first by label), with a note saying so; else None."""
        own = [e for e in self.entries_of(target.provider)]
        exact = next((e for e in own if e.target == target), None)
        if exact is not None:
            return exact, None
        for e in sorted(own, key=lambda e: e.target.label):
            if e.target.can_stand_in_for(target):
                return e, f"compared with the baseline of device class {e.target.label} (none for {target.label})"
        return None, None

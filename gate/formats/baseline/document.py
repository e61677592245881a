"""``Baseline``: a baseline document as types, both ways. ``to_document`` gives back exactly the document
the writer writes, so a file read and written again keeps its bytes; ``entry_for`` holds the one rule
for which entry judges a target. ``update`` and ``changes`` build on this module, never the other way.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gate.core.runs import Meta
from gate.core.status import DataDependence
from gate.core.target import Target
from gate.fingerprint import Fingerprint

from .schema import FORMAT, VERSION


@dataclass(frozen=True)
class BaselineLayer:
    """A layer of the recorded reference, in execution order."""

    name: str
    type: str
    fp: Fingerprint
    noise: float | None = None  # run-to-run change measured by `update-baseline --calibrate`
    reached: str = "float64"  # the coarsest precision the reference computed in up to this layer
    data_dependent: DataDependence | None = None  # its shape depends on values, and how that was seen

    @classmethod
    def from_document(cls, d: dict[str, Any]) -> BaselineLayer:
        # The schema has checked the fingerprints against the file's own parameters. Not
        # ``Fingerprint.from_dict``, which demands today's: a baseline taken with other parameters
        # must still read, so that ``load_baseline`` can name the parameter that differs.
        dependent = d.get("data_dependent")
        return cls(d["name"], d["type"], Fingerprint.from_valid(d["fp"]), d.get("noise"),
                   d.get("reached", "float64"), None if dependent is None else DataDependence(dependent))

    def to_document(self) -> dict[str, Any]:
        out = {"name": self.name, "type": self.type, "fp": self.fp.to_dict(sketch=True)}
        if self.noise is not None:
            out["noise"] = float(self.noise)
        if self.reached != "float64":  # written only below float64
            out["reached"] = self.reached
        if self.data_dependent is not None:  # written only where it is: other files keep their bytes
            out["data_dependent"] = str(self.data_dependent)
        return out


@dataclass(frozen=True)
class EntryLayer:
    """A layer as a runtime recorded it: its error against the reference of the time."""

    status: str  # "ok" | "folded" | "absent"
    err: float | None = None
    fp: Fingerprint | None = None
    noise: float | None = None

    @classmethod
    def from_document(cls, d: dict[str, Any]) -> EntryLayer:
        fp = None if d["fp"] is None else Fingerprint.from_valid(d["fp"])
        return cls(d["status"], d["err"], fp, d.get("noise"))

    def to_document(self) -> dict[str, Any]:
        # str(): a status word (gate.core.status) becomes its plain value; the packer is strict
        out = {"status": str(self.status), "err": None if self.err is None else float(self.err),
               "fp": None if self.fp is None else self.fp.to_dict(sketch=False)}
        if self.noise is not None:
            out["noise"] = float(self.noise)
        return out


@dataclass(frozen=True)
class Entry:
    """What one target recorded."""

    target: Target
    latency_ms: float | None = None
    placement: dict[str, Any] | None = None
    layers: dict[str, EntryLayer] = field(default_factory=dict)
    session_options: dict[str, Any] | None = None
    numerics: dict[str, str] | None = None  # PyTorch's TF32/cuDNN/matmul-precision settings (torch providers)
    # The file's "precision" key; None: the target's. The schema does not tie it to the label.
    precision: str | None = None

    def __post_init__(self) -> None:
        if self.precision is None:
            object.__setattr__(self, "precision", self.target.precision)

    @classmethod
    def from_document(cls, provider: str, label: str, d: dict[str, Any]) -> Entry:
        rows = {name: EntryLayer.from_document(r) for name, r in d["layers"].items()}
        return cls(Target.parse(provider, label), d.get("latency_ms"), d.get("placement"), rows,
                   d.get("session_options"), d.get("numerics"), d["precision"])

    def to_document(self) -> dict[str, Any]:
        """The entry as the writer writes it: latency and placement always (nil when unknown),
        session options and numerics only when recorded."""
        out: dict[str, Any] = {"precision": self.precision, "latency_ms": self.latency_ms, "placement": self.placement}
        if self.session_options is not None:
            out["session_options"] = self.session_options
        if self.numerics is not None:
            out["numerics"] = self.numerics
        out["layers"] = {name: row.to_document() for name, row in self.layers.items()}
        return out


@dataclass(frozen=True)
class Baseline:
    model: str
    meta: Meta
    reference_dtype: str
    layers: tuple[BaselineLayer, ...]
    entries: tuple[Entry, ...]  # grouped by provider, in the order of the document's providers

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Baseline:
        """The types of a document the schema has validated (``codec.decode_baseline``)."""
        layers = tuple(BaselineLayer.from_document(x) for x in doc["layers"])
        entries = tuple(Entry.from_document(provider, label, e)
                        for provider, classes in doc["providers"].items() for label, e in classes.items())
        return cls(doc["model"], Meta.from_dict(doc["meta"]), doc["reference"]["dtype"], layers, entries)

    def to_document(self) -> dict[str, Any]:
        """The document the writer writes for this baseline (``codec.encode_baseline`` takes it)."""
        providers: dict[str, dict[str, Any]] = {}
        for e in self.entries:
            providers.setdefault(e.target.provider, {})[e.target.label] = e.to_document()
        return {
            "format": FORMAT,
            "version": VERSION,
            "model": self.model,
            "meta": self.meta.to_dict(),
            "reference": {"device": "cpu", "dtype": self.reference_dtype},
            "layers": [x.to_document() for x in self.layers],
            "providers": providers,
        }

    def layer(self, name: str) -> BaselineLayer | None:
        return self._by_name.get(name)

    @functools.cached_property
    def _by_name(self) -> dict[str, BaselineLayer]:
        return {x.name: x for x in self.layers}

    def entries_of(self, provider: str) -> Iterator[Entry]:
        return (e for e in self.entries if e.target.provider == provider)

    def entry(self, target: Target) -> Entry | None:
        """The entry recorded for exactly ``target``."""
        return next((e for e in self.entries_of(target.provider) if e.target == target), None)

    def entry_for(self, target: Target) -> tuple[Entry | None, str | None]:
        """The entry that judges ``target``: its own; else, for a CPU class, one of the same
        architecture and precision (first by label), with a note saying so; else None."""
        exact = self.entry(target)
        if exact is not None:
            return exact, None
        for e in sorted(self.entries_of(target.provider), key=lambda e: e.target.label):
            if e.target.can_stand_in_for(target):
                return e, f"compared with the baseline of device class {e.target.label} (none for {target.label})"
        return None, None

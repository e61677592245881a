"""What a run took from before instead of computing it, stage by stage, and why: plain data,
carried from the run to the report (``models[].reuse``). The decisions are made once, in
``gate.pipeline.stages``; the stage table is ``gate.pipeline.content_key.STAGE_PARTS``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gate.core.status import CacheState, FullWhy, KeyPart, Stage

if TYPE_CHECKING:
    from gate.core.fields import Obj


@dataclass(frozen=True)
class Alarm:
    """A key that gave a second, different output: what the stage read is not all in its key. The
    key is never reused on this machine again (``gate.store``)."""

    stage: Stage
    key: str
    stored: str | None  # digest of the output recorded under the key (None: the baseline's fingerprints)
    computed: str | None  # digest of what this run computed under the same key
    note: str | None = None  # where they differ, in words

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage, "key": self.key, "stored": self.stored, "computed": self.computed}
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, o: Obj) -> Alarm:
        return cls(o.word("stage", Stage), o.str("key"), o.opt_str("stored"), o.opt_str("computed"), o.opt_str("note"))


@dataclass(frozen=True)
class StageRun:
    """One keyed stage of one model's run: its key (None: none could be taken) and where its
    output came from (``HIT``: the store under that key; any other state: computed, and why)."""

    stage: Stage
    key: str | None
    state: CacheState
    note: str | None = None  # what failed its checks, which case's export it shares, ...

    @property
    def reused(self) -> bool:
        return self.state == CacheState.HIT

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage, "key": self.key, "state": self.state}
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, o: Obj) -> StageRun:
        return cls(o.word("stage", Stage), o.opt_str("key"), o.word("state", CacheState), o.opt_str("note"))


@dataclass(frozen=True)
class Shipped:
    """The digest of the graph that ships (after the transform) against the one the baseline
    records: a changed graph is said even where nothing upstream of it changed."""

    digest: str | None
    baseline: str | None

    @property
    def changed(self) -> bool:
        return bool(self.digest and self.baseline and self.digest != self.baseline)

    def to_dict(self) -> dict[str, Any]:
        return {"digest": self.digest, "baseline": self.baseline, "changed": self.changed}

    @classmethod
    def from_dict(cls, o: Obj) -> Shipped:
        return cls(o.opt_str("digest"), o.opt_str("baseline"))


@dataclass
class Reuse:
    """``why`` says why the float64 reference ran (None exactly when its fingerprints are the
    baseline's). ``stages`` says, per keyed stage, where its output came from. ``changed`` and
    ``details`` name the parts of the content key that differ from the baseline's, and what moved."""

    key: str | None  # this run's content key (None: none could be taken)
    why: FullWhy | None = None
    stages: list[StageRun] = field(default_factory=list)
    changed: list[KeyPart] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    outputs: bool = True  # the float64 outputs were at hand: exact output metrics measured
    unseen: list[str] = field(default_factory=list)  # operations the key sees by name only (custom ops)
    shipped: Shipped | None = None
    alarms: list[Alarm] = field(default_factory=list)
    transform: str | None = None  # the transform ("module:function") the transform stage ran or took

    @property
    def reference(self) -> bool:
        """The float64 reference's fingerprints are the baseline's (no float64 run)."""
        return self.why is None

    def stage(self, stage: Stage) -> StageRun | None:
        return next((s for s in self.stages if s.stage == stage), None)

    @property
    def cache(self) -> CacheState:
        """Where the exported graph came from (the export stage's state)."""
        export = self.stage(Stage.EXPORT)
        return export.state if export is not None else CacheState.OFF

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "reference": self.reference, "cache": self.cache, "why": self.why,
                               "changed": list(self.changed), "details": list(self.details),
                               "outputs": self.outputs, "stages": [s.to_dict() for s in self.stages]}
        export = self.stage(Stage.EXPORT)
        if export is not None and export.note:
            out["cache_note"] = export.note
        if self.unseen:
            out["unseen"] = list(self.unseen)
        if self.shipped is not None:
            out["shipped"] = self.shipped.to_dict()
        if self.alarms:
            out["alarms"] = [a.to_dict() for a in self.alarms]
        if self.transform:
            out["transform"] = self.transform
        return out

    @classmethod
    def from_dict(cls, o: Obj) -> Reuse:
        """From a report (``gate.core.fields.Obj``); words this version does not know are refused.
        A report without ``stages`` (an older writer's) has its export stage read from ``cache``."""
        why = o.opt_word("why", FullWhy)
        if o.bool("reference") != (why is None):
            o.fail("reference", "contradicts `why`")
        stages = (o.objs("stages", StageRun.from_dict) if o.has("stages") else
                  [StageRun(Stage.EXPORT, None, o.word("cache", CacheState), o.opt_str("cache_note"))])
        return cls(key=o.opt_str("key"), why=why, stages=stages,
                   changed=o.word_list("changed", KeyPart), details=o.strs("details"),
                   outputs=o.bool("outputs") if o.has("outputs") else True, unseen=o.strs("unseen"),
                   shipped=o.opt_obj("shipped", Shipped.from_dict), alarms=o.objs("alarms", Alarm.from_dict),
                   transform=o.opt_str("transform"))

"""A re-recording cut into shards, brought together once: each leg's ``update-baseline --shard K/N
--out DIR`` copies its share's baseline files into DIR beside ``share.json``; ``merge --baselines``
holds the legs to the rule of a sharded check's legs (``gate.verdict.merge.cover``), reads every file
as any baseline, and only then writes them. The legs must start from the same baselines (one commit):
the plan weighs models by the seconds those record."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gate.commands.common import location, read_located
from gate.commands.shards import ShardPlan
from gate.config import Config
from gate.core.fields import Obj
from gate.errors import FormatError, GateError
from gate.formats.atomic import atomic_write_bytes, atomic_write_text
from gate.formats.baseline import Baseline
from gate.formats.baseline.store import Location
from gate.verdict.merge import Part, cover
from gate.verdict.shard import ShardRun

SHARE = "share.json"
SCHEMA = "parity-gate/baseline-share"
MAX_BYTES = 64 * 2**20  # a share.json names models only: far under this even at MAX_CASES


@dataclass(frozen=True)
class Share:
    name: str  # the leg's folder: what a refusal names
    folder: Path
    run: ShardRun
    recorded: tuple[str, ...]
    sweeps: dict[str, str]  # a recorded sweep case -> its sweep (the set file that holds it)

    @property
    def part(self) -> Part:
        return Part(self.name, self.run, self.recorded)

    def location(self, model: str) -> Location:
        """Where the leg's folder holds the model's baseline: its own file, or its sweep's set file."""
        return Location.of(self.folder, model, self.sweeps.get(model))


def share_folder(out: Path, sharded: bool) -> None:
    """``out`` made a folder for a share, before any model runs: GateError (exit 2) naming it where it cannot
    be one (a file there, no permission), or where nothing is sharded."""
    if not sharded:
        raise GateError("--out writes one share of a sharded re-recording: give --shard K/N")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GateError(f"--out {out}: cannot be a folder for the share ({e.strerror or e})") from None


def write_share(config: Config, plan: ShardPlan, out: Path) -> list[Path]:
    """Copy the share's baseline files (as just recorded) into ``out``, then its ``share.json``."""
    out.mkdir(parents=True, exist_ok=True)
    files = list(dict.fromkeys(location(config, spec).path for spec in plan.models))
    for path in files:
        atomic_write_bytes(out / path.name, path.read_bytes())
    doc = {"schema": SCHEMA, "version": 1, "shard": plan.run.to_dict(),
           "recorded": [spec.name for spec in plan.models],
           "sweeps": {spec.name: spec.sweep.sweep for spec in plan.models if spec.sweep is not None}}
    atomic_write_text(out / SHARE, json.dumps(doc, indent=1) + "\n")
    return [out / path.name for path in files]


def read_share(folder: Path) -> Share:
    """The leg's ``share.json``; FormatError naming the file and the key."""
    path = folder / SHARE
    if not path.is_file() or path.is_symlink():
        raise FormatError(f"`{folder}`: holds no {SHARE} (`update-baseline --shard K/N --out DIR` writes it)")
    if path.stat().st_size > MAX_BYTES:
        raise FormatError(f"`{path}`: over the {MAX_BYTES:,}-byte limit")
    try:
        doc = json.loads(path.read_bytes())
    except (RecursionError, UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"`{path}`: not JSON ({type(e).__name__})") from None
    o = Obj(doc, f"`{path}`")
    o.expect("schema", SCHEMA)
    if o.int("version") != 1:
        o.fail("version", f"is {o.data.get('version')!r}, expected 1")
    run = o.opt_obj("shard", ShardRun.from_dict)
    if run is None:
        o.fail("shard", "expected the leg's shard, got nothing")
    return Share(folder.name, folder, run, tuple(o.strs("recorded")), o.words("sweeps"))


def combine(shares: list[Share], count: int, into: Path) -> dict[Path, Share]:
    """Each model's baseline from the one leg that recorded it, read and checked, then written into
    ``into``; GateError (exit 2), before anything is written, for a share missing, doubled or of another
    run."""
    parts = [share.part for share in shares]
    owner = {id(part): share for part, share in zip(parts, shares, strict=True)}
    files: dict[Path, Share] = {}
    sets: dict[Path, dict[str, Baseline]] = {}  # a sweep's set file, read once for all its cases
    for model, part in cover(parts, count, verb="recorded", thing="share").items():
        share = owner[id(part)]
        loc = share.location(model)
        try:  # as distrustful as any reader of a baseline: FormatError names the file
            held = read_located(loc, sets)
        except FileNotFoundError:
            raise GateError(f"{part.label} recorded model `{model}` "
                            f"but holds no baseline of it ({loc})") from None
        if loc.case is None and held.model != model:  # `check` would refuse it: never written
            raise GateError(f"{part.label}: baseline `{loc.path.name}` holds model `{held.model}`, not "
                            f"`{model}`")
        prior = files.setdefault(into / loc.path.name, share)
        if prior is not share:
            raise GateError(f"baseline `{loc.path.name}`: written by {prior.part.label} and {part.label}")
    into.mkdir(parents=True, exist_ok=True)
    for target, share in files.items():
        atomic_write_bytes(target, (share.folder / target.name).read_bytes())
    return files

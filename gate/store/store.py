"""The store: ``get`` an entry by stage and key (checked), ``put`` one (written once), and the alarms of
keys that gave two different outputs.

A key has at most one output. ``put`` under a key that holds one compares them (by digest, or by the
stage's rule for numbers that may differ in their last bits): the same output is a no-op; another
raises an alarm, recorded in ``<dir>/alarms/``, after which the key is neither read nor written on
this machine. A damaged entry is removed and replaced. Entries are renamed into place, so a reader
sees a whole entry or none, and of two racing writers the first wins and the second is compared."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from gate import env
from gate.core.reuse import Alarm
from gate.core.status import CacheState, Stage, Word
from gate.store.entry import HEX64, MANIFEST, Corrupt, Entry, read_entry, write_manifest

ALARMS = "alarms"
ALARM_MAX = 64 * 2**10  # bytes of one alarm record
STALE_S = 24 * 3600  # a temporary folder this old was left by a writer that died


class PutState(Word):
    STORED = "stored"  # the key's first output: written
    SAME = "same"  # the key holds this output already
    ALARM = "alarm"  # the key holds another output: nothing replaced, the alarm raised
    BARRED = "barred"  # an alarm was raised on this key before: nothing written
    FAILED = "failed"  # the folder could not be written (the store is a saving, never a failure)


@dataclass(frozen=True)
class Put:
    state: PutState
    alarm: Alarm | None = None


@dataclass(frozen=True)
class Lookup:
    state: CacheState  # HIT, MISS, CORRUPT or ALARM
    entry: Entry | None = None
    note: str | None = None  # what failed its checks (CORRUPT), or the alarm (ALARM)


# A stage's rule for "the same output" beyond equal digests: None when they agree, else where they differ.
Agrees = Callable[[Entry], "str | None"]


class Output(Protocol):
    """A stage's output as every stage hands it to the store; ``differs_from`` is None when an output
    already under its key is the same, else how it differs (``Corrupt``: that entry's files are not what
    it records). Read back, each verifies its own payload; ``proves``: the files its reader proves from the
    digest its payload records (not hashed again)."""

    proves: ClassVar[frozenset[str]]

    def write(self, folder: Path) -> None: ...

    def output_digest(self) -> str: ...

    def payload(self) -> dict[str, Any]: ...

    def differs_from(self, entry: Entry) -> str | None: ...


class Store:
    def __init__(self, root: Path):
        self.root = root

    def folder(self, stage: Stage, key: str) -> Path:
        if not HEX64.match(key):
            raise ValueError(f"not a stage key: {key!r}")
        return self.root / Stage(stage).value / key

    def _alarm_path(self, stage: Stage, key: str) -> Path:
        self.folder(stage, key)  # validates both
        return self.root / ALARMS / f"{stage}-{key}.json"

    def alarmed(self, stage: Stage, key: str) -> Alarm | None:
        """The alarm raised on this key, if any. A record that cannot be read still bars the key."""
        path = self._alarm_path(stage, key)
        if not path.exists():
            return None
        try:
            if path.stat().st_size > ALARM_MAX:
                raise ValueError("too large")
            d = json.loads(path.read_bytes())
            return Alarm(Stage(stage), key, d.get("stored"), d.get("computed"), d.get("note"))
        except (OSError, ValueError, KeyError, TypeError):
            return Alarm(Stage(stage), key, "unknown", "unknown", "its alarm record is unreadable")

    def raise_alarm(self, stage: Stage, key: str, stored: str | None, computed: str | None,
                    note: str | None = None) -> Alarm:
        """Record that ``key`` gave two outputs: from now on it is neither read nor written here."""
        alarm = Alarm(Stage(stage), key, stored, computed, note)
        path = self._alarm_path(stage, key)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**alarm.to_dict(), "at": time.time()}, sort_keys=True))
            os.replace(tmp, path)
        return alarm

    def get(self, stage: Stage, key: str, unchecked: frozenset[str] = frozenset()) -> Lookup:
        """The entry under ``key``, checked file by file (``read_entry``); a failed check removes it."""
        alarm = self.alarmed(stage, key)
        if alarm is not None:
            return Lookup(CacheState.ALARM, note=_alarm_note(alarm))
        folder = self.folder(stage, key)
        if not folder.is_dir():
            return Lookup(CacheState.MISS)
        try:
            entry = read_entry(folder, str(stage), key, unchecked)
        except (Corrupt, OSError) as exc:
            self.discard(folder)
            return Lookup(CacheState.CORRUPT, note=f"entry {key[:12]}: {exc}")
        with contextlib.suppress(OSError):
            os.utime(folder / MANIFEST)  # recently used: the last to be pruned
        return Lookup(CacheState.HIT, entry)

    def put(self, stage: Stage, key: str, write: Callable[[Path], None], digest: str, payload: dict[str, Any],
            agrees: Agrees | None = None, proven: frozenset[str] = frozenset()) -> Put:
        """Store what ``write(folder)`` writes under ``key``, or compare with the output it holds;
        ``proven``: the files ``agrees`` and the stage's reader prove themselves (``Output.proves``)."""
        for _ in range(2):  # a second round only when another writer got there between the look and the rename
            found = self.get(stage, key, proven)
            if found.state == CacheState.ALARM:
                return Put(PutState.BARRED, self.alarmed(stage, key))
            if found.entry is not None:
                try:
                    return self._compare(found.entry, digest, agrees)
                except Corrupt:  # its files are not what it records (the stage's own proof): replaced
                    self.discard(found.entry.folder)
                    continue
            written = self._write(stage, key, write, digest, payload, proven)
            if written is not None:
                return written
        return Put(PutState.FAILED)

    def _compare(self, entry: Entry, digest: str, agrees: Agrees | None) -> Put:
        if agrees is not None:
            differs = agrees(entry)
        else:
            differs = None if entry.digest == digest else "another output under the same key"
        if differs is None:
            return Put(PutState.SAME)
        return Put(PutState.ALARM, self.raise_alarm(Stage(entry.stage), entry.key, entry.digest, digest, differs))

    def _write(self, stage: Stage, key: str, write: Callable[[Path], None], digest: str,
               payload: dict[str, Any], proven: frozenset[str]) -> Put | None:
        """Put(STORED) or Put(FAILED); None when another writer's entry appeared meanwhile."""
        final = self.folder(stage, key)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        except OSError:
            return Put(PutState.FAILED)
        try:
            write(tmp)
            write_manifest(tmp, str(stage), key, digest, payload, proven)
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            return None if final.is_dir() else Put(PutState.FAILED)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.prune(keep=final)
        return Put(PutState.STORED)

    def discard(self, folder: Path) -> None:
        """Remove an entry: renamed aside first, so no reader sees it half deleted."""
        aside = folder.with_name(f".trash-{folder.name[:12]}-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.rename(folder, aside)
        except OSError:
            return
        shutil.rmtree(aside, ignore_errors=True)

    def _entries(self) -> Iterator[tuple[float, int, Path]]:
        now = time.time()
        for stage in self.root.iterdir() if self.root.is_dir() else ():
            if stage.name == ALARMS or stage.name.startswith(".") or not stage.is_dir():
                continue
            for child in stage.iterdir():
                try:
                    if child.name.startswith((".tmp-", ".trash-")):
                        if now - child.stat().st_mtime > STALE_S:
                            shutil.rmtree(child, ignore_errors=True)
                        continue
                    used = (child / MANIFEST).stat().st_mtime
                    size = sum(p.stat().st_size for p in child.iterdir())
                except OSError:
                    continue
                yield used, size, child

    def prune(self, keep: Path | None = None, limit: int | None = None) -> list[str]:
        """Remove the least recently used entries past ``limit`` bytes (default ``PARITY_GATE_CACHE_MAX_GB``)
        and dead writers' temporary folders; the entries removed, as ``stage/key``. Alarms stay."""
        limit = env.store_max_bytes() if limit is None else limit
        entries = list(self._entries())
        total, removed = sum(size for _, size, _ in entries), []
        for _used, size, child in sorted(entries):
            if total <= limit:
                break
            if child != keep:
                self.discard(child)
                total -= size
                removed.append(f"{child.parent.name}/{child.name}")
        return removed


def _alarm_note(alarm: Alarm) -> str:
    return (f"key {alarm.key[:12]} once gave two different outputs here ({alarm.note or 'they differ'}): "
            "never reused on this machine")


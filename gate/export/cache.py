"""The export cache: shipped graphs by content key, in a local folder, so that a check of an
unchanged model does not export it again (docs/verdict.md#reuse-an-unchanged-model-costs-less).

``<dir>/exports/<key>/`` holds ``model.onnx`` (and ``model.onnx.data`` past the external-data
threshold), ``outputs.npz`` where the float64 reference's outputs were at hand, and
``manifest.json``: the key, each file's size and sha256, and the payload its writer gave (what
the export recorded, the layer map). The folder is ``PARITY_GATE_CACHE_DIR``, else
``$XDG_CACHE_HOME/parity-gate``, else ``~/.cache/parity-gate``; ``off`` turns the cache off.

Entries are written into a hidden temporary folder and renamed into place: a reader sees a whole
entry or none. Readers trust nothing: a manifest of another format, key or size, a file missing,
shorter, longer or with other bytes is a miss (``corrupt``, with the reason) and the entry is
removed, never a wrong graph. Least recently used entries go when the folder passes
``PARITY_GATE_CACHE_MAX_GB`` (default 20). No torch here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gate.core.status import CacheState

CACHE_ENV, MAX_ENV = "PARITY_GATE_CACHE_DIR", "PARITY_GATE_CACHE_MAX_GB"
FORMAT, VERSION = "parity-gate/export-cache", 1
MANIFEST, MODEL, DATA, OUTPUTS = "manifest.json", "model.onnx", "model.onnx.data", "outputs.npz"
FILES = (MODEL, DATA, OUTPUTS)
MANIFEST_MAX = 64 * 2**20  # bytes; a layer map of 100,000 layers is a few MB
STALE_S = 24 * 3600  # a temporary folder this old was left by a writer that died
KEY = re.compile(r"[0-9a-f]{64}\Z")
CHUNK = 16 * 2**20


def cache_dir() -> Path | None:
    """The cache folder (None: turned off)."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "none", "0") else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "parity-gate"


def _max_bytes() -> int:
    try:
        return int(float(os.environ.get(MAX_ENV, "20")) * 2**30)
    except ValueError:
        return 20 * 2**30


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


class Corrupt(Exception):
    """An entry that failed a check; the message says which."""


@dataclass(frozen=True)
class Entry:
    """A checked entry: every file as its manifest says."""

    folder: Path
    payload: dict[str, Any]  # what the writer stored beside the files (checked by its reader)
    has_outputs: bool

    @property
    def model(self) -> Path:
        return self.folder / MODEL

    def outputs(self) -> list[np.ndarray]:
        """The float64 reference's outputs stored with the entry (no pickles)."""
        try:
            with np.load(self.folder / OUTPUTS, allow_pickle=False) as npz:
                return [npz[f"out{i}"] for i in range(len(npz.files))]
        except (OSError, ValueError, KeyError) as exc:
            raise Corrupt(f"{OUTPUTS}: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class Lookup:
    state: CacheState  # HIT, MISS or CORRUPT
    entry: Entry | None = None
    note: str | None = None  # what failed its checks (CORRUPT)


class ExportCache:
    def __init__(self, root: Path):
        self.root = root
        self.exports = root / "exports"

    def folder(self, key: str) -> Path:
        if not KEY.match(key):
            raise ValueError(f"not a content key: {key!r}")
        return self.exports / key

    def lookup(self, key: str) -> Lookup:
        """The entry for ``key``, checked file by file; a failed check removes it."""
        folder = self.folder(key)
        if not folder.is_dir():
            return Lookup(CacheState.MISS)
        try:
            entry = self._checked(folder, key)
        except (Corrupt, OSError) as exc:
            self.discard(folder)
            return Lookup(CacheState.CORRUPT, note=f"entry {key[:12]}: {exc}")
        with contextlib.suppress(OSError):
            os.utime(folder / MANIFEST)  # recently used: the last to be pruned
        return Lookup(CacheState.HIT, entry)

    def _checked(self, folder: Path, key: str) -> Entry:
        path = folder / MANIFEST
        size = path.stat().st_size
        if size > MANIFEST_MAX:
            raise Corrupt(f"{MANIFEST} is {size:,} bytes (limit {MANIFEST_MAX:,})")
        try:
            manifest = json.loads(path.read_bytes())
        except (ValueError, UnicodeDecodeError) as exc:
            raise Corrupt(f"{MANIFEST} is not JSON ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise Corrupt(f"{MANIFEST} is not a {FORMAT} v{VERSION} manifest")
        if manifest.get("key") != key:
            raise Corrupt(f"{MANIFEST} is for another key")
        files, payload = manifest.get("files"), manifest.get("payload")
        if not isinstance(files, dict) or MODEL not in files or not set(files) <= set(FILES) \
                or not isinstance(payload, dict):
            raise Corrupt(f"{MANIFEST}: `files` or `payload` malformed")
        for name, info in files.items():
            if not isinstance(info, dict) or not isinstance(info.get("size"), int) \
                    or not isinstance(info.get("sha256"), str):
                raise Corrupt(f"{MANIFEST}: files.{name} malformed")
            actual = (folder / name).stat().st_size if (folder / name).is_file() else None
            if actual != info["size"]:
                raise Corrupt(f"{name} is {'missing' if actual is None else f'{actual:,} bytes'}, "
                              f"expected {info['size']:,}")
            if _sha256(folder / name) != info["sha256"]:
                raise Corrupt(f"{name} does not have the bytes its manifest records")
        return Entry(folder, payload, OUTPUTS in files)

    def store(self, key: str, model: Path, payload: dict[str, Any], outputs: list[np.ndarray] | None = None) -> bool:
        """Write the entry for ``key`` (the graph at ``model`` and its external data, hard-linked
        where the file system allows), atomically; False when another writer got there first or
        the folder cannot be written (the cache is a saving, never a failure)."""
        final = self.folder(key)
        try:
            self.exports.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.exports))
        except OSError:
            return False
        try:
            from gate.export import saved

            saved.copy_model(model, tmp)
            if outputs:
                np.savez(tmp / OUTPUTS, **{f"out{i}": a for i, a in enumerate(outputs)})
            files = {p.name: {"size": p.stat().st_size, "sha256": _sha256(p)}
                     for p in sorted(tmp.iterdir()) if p.name in FILES}
            manifest = {"format": FORMAT, "version": VERSION, "key": key, "files": files, "payload": payload}
            (tmp / MANIFEST).write_text(json.dumps(manifest, sort_keys=True))
            if final.exists():
                self.discard(final)
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        self.prune(keep=key)
        return True

    def discard(self, folder: Path) -> None:
        """Remove an entry: renamed aside first, so no reader sees it half deleted."""
        aside = folder.with_name(f".trash-{folder.name[:12]}-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.rename(folder, aside)
        except OSError:
            return
        shutil.rmtree(aside, ignore_errors=True)

    def prune(self, keep: str | None = None, limit: int | None = None) -> list[str]:
        """Remove the least recently used entries past ``limit`` bytes (default
        ``PARITY_GATE_CACHE_MAX_GB``) and temporary folders of writers that died; the keys removed."""
        limit = _max_bytes() if limit is None else limit
        entries, now = [], time.time()
        for child in self.exports.iterdir() if self.exports.is_dir() else ():
            try:
                if child.name.startswith((".tmp-", ".trash-")):
                    if now - child.stat().st_mtime > STALE_S:
                        shutil.rmtree(child, ignore_errors=True)
                    continue
                used = (child / MANIFEST).stat().st_mtime
                size = sum(p.stat().st_size for p in child.iterdir())
            except OSError:
                continue
            entries.append((used, size, child))
        total, removed = sum(size for _, size, _ in entries), []
        for _used, size, child in sorted(entries):
            if total <= limit:
                break
            if child.name != keep:
                self.discard(child)
                total -= size
                removed.append(child.name)
        return removed

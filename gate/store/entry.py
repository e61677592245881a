"""One entry of the store on disk: its manifest, written last into a folder that is renamed into
place, and the reader that trusts none of it. A manifest of another format, stage or key, over its
size limit, or a file missing, shorter, longer or with other bytes than it records is ``Corrupt``,
with the reason: never a wrong output. A file its stage's reader proves from a digest the payload
records (a graph's weights: ``Output.proves``) is recorded by its size only, never hashed twice."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT, VERSION = "parity-gate/store", 1
MANIFEST = "manifest.json"
MANIFEST_MAX = 64 * 2**20  # bytes; a layer map of 100,000 layers is a few MB
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
CHUNK = 16 * 2**20


class Corrupt(Exception):
    """An entry that failed a check; the message says which."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Entry:
    """A checked entry: every file as its manifest says."""

    folder: Path
    stage: str
    key: str
    digest: str  # the output's digest, as its stage defines it (equal digests: the same output)
    payload: dict[str, Any]  # what the stage stored beside the files (its own reader checks it)
    files: tuple[str, ...]

    def path(self, name: str) -> Path:
        if name not in self.files:
            raise Corrupt(f"the entry holds no `{name}`")
        return self.folder / name


def write_manifest(folder: Path, stage: str, key: str, digest: str, payload: dict[str, Any],
                   proven: frozenset[str] = frozenset()) -> None:
    """The manifest of the files ``folder`` holds (written last: an entry without one is no entry);
    ``proven``: files its reader proves itself, recorded by their size."""
    files: dict[str, dict[str, Any]] = {}
    for p in sorted(folder.iterdir()):
        if not FILE_NAME.match(p.name) or not p.is_file():
            raise ValueError(f"a stage wrote `{p.name}`, which the store cannot hold")
        files[p.name] = {"size": p.stat().st_size}
        if p.name not in proven:
            files[p.name]["sha256"] = sha256(p)
    manifest = {"format": FORMAT, "version": VERSION, "stage": stage, "key": key, "digest": digest,
                "files": files, "payload": payload}
    (folder / MANIFEST).write_text(json.dumps(manifest, sort_keys=True))


def read_entry(folder: Path, stage: str, key: str, unchecked: frozenset[str] = frozenset()) -> Entry:
    """The entry in ``folder``, checked file by file (raises ``Corrupt`` or ``OSError``): the bytes of
    each but ``unchecked``, the sizes of all (``unchecked``: what the caller's reader proves itself; only
    these may be recorded without a sha256)."""
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
    if manifest.get("stage") != stage or manifest.get("key") != key:
        raise Corrupt(f"{MANIFEST} is for another stage or key")
    digest, files, payload = manifest.get("digest"), manifest.get("files"), manifest.get("payload")
    if not isinstance(digest, str) or not HEX64.match(digest):
        raise Corrupt(f"{MANIFEST}: `digest` is not a sha256")
    if not isinstance(files, dict) or not isinstance(payload, dict):
        raise Corrupt(f"{MANIFEST}: `files` or `payload` malformed")
    present = {p.name for p in folder.iterdir()} - {MANIFEST}
    if set(files) - present:
        raise Corrupt(f"{', '.join(sorted(set(files) - present))[:200]} missing")
    if present - set(files):
        raise Corrupt(f"{', '.join(sorted(present - set(files)))[:200]} not in its manifest")
    for name, info in files.items():
        if (not FILE_NAME.match(name) or not isinstance(info, dict) or not isinstance(info.get("size"), int)
                or (not isinstance(info.get("sha256"), str) and name not in unchecked)):
            raise Corrupt(f"{MANIFEST}: files.{name[:60]} malformed")
        actual = (folder / name).stat().st_size
        if actual != info["size"]:
            raise Corrupt(f"{name} is {actual:,} bytes, expected {info['size']:,}")
        if name not in unchecked and sha256(folder / name) != info["sha256"]:
            raise Corrupt(f"{name} does not have the bytes its manifest records")
    return Entry(folder, stage, key, digest, payload, tuple(sorted(files)))

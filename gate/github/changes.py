"""What a pull request changes that decides its own verdict, from the API's file list (the judging side
has no checkout, and a report could leave anything out): baselines (every ``*.msgpack.zst``, since a
pull request could move ``baseline-dir``), configs and the files their ``include`` patterns match,
constraints, and everything under ``.github/`` (the workflow chooses what a run judges). A pyproject.toml
counts only where its ``[tool.parity-gate]`` table differs. Both names of a rename count; a file that
cannot be read to compare counts as changed: it could be.
"""

from __future__ import annotations

import base64
import fnmatch
import posixpath
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gate.core.files import CONFIG_TABLE, CONSTRAINTS, PYPROJECT, STANDALONE
from gate.core.status import ChangeKind
from gate.formats.baseline.names import SUFFIX
from gate.github.client import GitHubClient, GitHubError
from gate.github.pull import Pull, changed_paths
from gate.render.text import code, plain

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MAX_SHOWN = 10
GITHUB = ".github/"  # workflows, local actions (.github/actions/**), CODEOWNERS: all of it decides
UNREADABLE = object()  # a file the contents API would not give, or not TOML


@dataclass(frozen=True)
class Named:
    """The files the workflow names (its ``config`` and ``constraints`` inputs; relative to the repository
    root or to the working directory: a changed file whose path ends with one is that file)."""

    config: str = ""
    constraints: str = ""

    def names(self, path: str, given: str) -> bool:
        given = posixpath.normpath(given.strip()).removeprefix("./") if given.strip() else ""
        return bool(given) and given != "." and (path == given or path.endswith("/" + given))


@dataclass(frozen=True)
class Decisive:
    """A file the pull request changes that decides its verdict; ``note`` says how, where the name does not."""

    kind: ChangeKind
    path: str
    note: str = ""


@dataclass(frozen=True)
class GateChanges:
    files: tuple[Decisive, ...] = ()

    @classmethod
    def of_baselines(cls, paths: list[str] | None) -> GateChanges:
        return cls(tuple(Decisive(ChangeKind.BASELINES, p) for p in paths or ()))

    @property
    def kinds(self) -> tuple[ChangeKind, ...]:
        found = {f.kind for f in self.files}
        return tuple(k for k in ChangeKind if k in found)

    def of(self, kind: ChangeKind) -> list[Decisive]:
        return [f for f in self.files if f.kind == kind]

    @property
    def baselines(self) -> list[str]:
        return [f.path for f in self.of(ChangeKind.BASELINES)]

    def what(self) -> str:
        """What an approval approves: "baseline change", "change to its baselines and config"."""
        kinds = [str(k) for k in self.kinds]
        if kinds in ([], [str(ChangeKind.BASELINES)]):
            return "baseline change"
        return "change to its " + (", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0])


def gate_changes(client: GitHubClient, pull: Pull, named: Named) -> GateChanges:
    """The files ``pull`` changes that decide its verdict (ChangesUnknown when its file list cannot be read)."""
    paths = changed_paths(client, pull)
    tables = _Tables(client, pull)
    found: list[Decisive] = []
    for path in paths:
        kind, note = _kind(path, named, tables)
        if kind is not None:
            found.append(Decisive(kind, path, note))
    left = [p for p in paths if all(f.path != p for f in found)]
    if left:  # sweep files a config includes: the configs the workflow reads, and any the pull request changes
        configs = [named.config] if named.config.strip() else []
        configs += [f.path for f in found if f.kind == ChangeKind.CONFIG]
        for path in left:
            by = next((c for c in dict.fromkeys(configs + _owners(path)) if tables.includes(c, path)), None)
            if by is not None:
                found.append(Decisive(ChangeKind.CONFIG, path, f"included by {by}"))
    return GateChanges(tuple(sorted(found, key=lambda f: (list(ChangeKind).index(f.kind), f.path))))


def _owners(path: str) -> list[str]:
    """The configs that could own ``path``, as ``find_config`` looks from its folder: each folder's
    pyproject.toml and parity-gate.toml, from the path's own up to the repository root."""
    out, folder = [], posixpath.dirname(path)
    while True:
        out += [posixpath.join(folder, PYPROJECT), posixpath.join(folder, STANDALONE)]
        if not folder:
            return out
        folder = posixpath.dirname(folder)


def _kind(path: str, named: Named, tables: _Tables) -> tuple[ChangeKind | None, str]:
    name = posixpath.basename(path)
    if path.endswith(SUFFIX):
        return ChangeKind.BASELINES, ""
    if path.startswith(GITHUB):
        return ChangeKind.WORKFLOWS, ""
    if name == CONSTRAINTS or named.names(path, named.constraints):
        return ChangeKind.CONSTRAINTS, ""
    if name == PYPROJECT:
        moved = tables.differs(path)
        return (ChangeKind.CONFIG, moved) if moved else (None, "")
    if name == STANDALONE or named.names(path, named.config):
        return ChangeKind.CONFIG, ""
    return None, ""


class _Tables:
    """The config table of a file at the base and at the head commit, through the contents API, read once."""

    def __init__(self, client: GitHubClient, pull: Pull):
        self.client, self.pull, self.read = client, pull, {}

    def table(self, path: str, ref: str) -> Any:
        """The file's config table (None: no such file, or no table), or UNREADABLE."""
        if (path, ref) not in self.read:
            self.read[(path, ref)] = self._table(path, ref)
        return self.read[(path, ref)]

    def _table(self, path: str, ref: str) -> Any:
        if not ref:
            return UNREADABLE
        try:
            data = self.client.get(f"/repos/{self.pull.repository}/contents/{quote(path)}", ref=ref)
        except GitHubError as e:
            return None if e.status == 404 else UNREADABLE
        if not isinstance(data, dict) or data.get("encoding") != "base64" or not isinstance(data.get("content"), str):
            return UNREADABLE
        try:
            doc = tomllib.loads(base64.b64decode(data["content"]).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):  # TOMLDecodeError is a ValueError, as is bad base64
            return UNREADABLE
        tool = doc.get(CONFIG_TABLE[0])
        table = tool.get(CONFIG_TABLE[1]) if isinstance(tool, dict) else None
        return table if table is not None or posixpath.basename(path) == PYPROJECT else doc  # keys at top level

    def differs(self, path: str) -> str:
        """Why ``path``'s config table counts as changed ("" when it is the same at the base and the head)."""
        base, head = self.table(path, self.pull.base_sha), self.table(path, self.pull.head_sha)
        if UNREADABLE in (base, head):
            return "could not be compared"
        return f"its [{'.'.join(CONFIG_TABLE)}] table" if base != head else ""

    def includes(self, config: str, path: str) -> bool:
        """Whether ``config``'s ``include`` patterns (at the base or the head) match ``path``; an unreadable
        config could, so it does."""
        folder = posixpath.dirname(config)
        for ref in (self.pull.base_sha, self.pull.head_sha):
            table = self.table(config, ref)
            if table is UNREADABLE:
                return True
            patterns = table.get("include") if isinstance(table, dict) else None
            for pattern in patterns if isinstance(patterns, list) else []:
                if isinstance(pattern, str) and fnmatch.fnmatchcase(path, posixpath.normpath(posixpath.join(folder,
                                                                                                         pattern))):
                    return True
        return False


def changes_line(changes: GateChanges) -> str:
    """The comment's line for what the pull request changes besides baselines (Markdown; "" when nothing)."""
    said = []
    for kind in (ChangeKind.CONFIG, ChangeKind.CONSTRAINTS, ChangeKind.WORKFLOWS):
        files = changes.of(kind)
        if files:
            shown = ", ".join(code(f.path, 120) + (f" ({plain(f.note, 80)})" if f.note else "") for f in files[:MAX_SHOWN])
            more = f" and {len(files) - MAX_SHOWN} more" if len(files) > MAX_SHOWN else ""
            said.append(f"{kind} {shown}{more}")
    if not said:
        return ""
    return ("**This pull request changes what judges it:** " + "; ".join(said) + ". The gate's settings, the versions "
            "it runs or the workflow that measures decide what passes: review them as such.")

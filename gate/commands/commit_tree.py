"""The files of one commit of this repository, read with git as the config loader reads the disk
(``gate.config.Files``): no checkout, nothing outside the repository, its symlinks followed, names that
are not UTF-8 kept as the disk's (``os.fsdecode``). ``check --changed-since`` reads the base's config
through it (gate.commands.loosened)."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path, PurePosixPath

from gate.config import Files


class CommitTree(Files):
    """The files of one commit, read with git: no checkout, nothing outside the repository, its symlinks
    followed as the disk follows them, names with a leading dot matched as ``glob`` matches them."""

    def __init__(self, top: Path, commit: str, entries: dict[str, tuple[str, str]]):
        self.top, self.commit, self.entries = top, commit, entries  # name -> (mode, object)
        self.children: dict[str, set[str]] = {}
        for name in entries:
            parts = name.split("/")
            for i in range(len(parts)):
                self.children.setdefault("/".join(parts[:i]), set()).add(parts[i])

    @classmethod
    def at(cls, folder: Path, commit: str) -> CommitTree | None:
        top = _git(folder, "rev-parse", "--show-toplevel")
        listed = _git(folder, "ls-tree", "-r", "-z", "--full-tree", commit)
        if top is None or listed is None:
            return None
        entries = {}
        for row in os.fsdecode(listed).split("\0"):  # names as the disk's
            if row:
                meta, name = row.split("\t", 1)
                mode, _, obj = meta.split(" ")
                entries[name] = (mode, obj)
        return cls(Path(os.fsdecode(top.strip())).resolve(), commit, entries)

    def relative(self, path: Path | str) -> str | None:
        """``path`` from the repository's top, as written (its symlinks not followed); "." for the top;
        None outside it (a path reached through a link from outside: its real place)."""
        for p in (os.path.normpath(os.path.abspath(path)), os.path.realpath(path)):
            rel = os.path.relpath(p, self.top)
            if not rel.startswith(".."):
                return PurePosixPath(Path(rel)).as_posix()
        return None

    def _resolve(self, name: str, depth: int = 0) -> str | None:
        """``name`` with the tree's symlinks followed; None where it leaves the tree."""
        parts, done = name.split("/"), list[str]()
        for i, part in enumerate(parts):
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    return None
                done.pop()
                continue
            mode, obj = self.entries.get("/".join([*done, part]), ("", ""))
            if mode == "120000":  # a symlink: its target, from the link's folder
                target = _git(self.top, "cat-file", "blob", obj)
                if target is None or depth > 40 or target.startswith(b"/"):
                    return None
                return self._resolve("/".join([*done, os.fsdecode(target), *parts[i + 1:]]), depth + 1)
            done.append(part)
        return "/".join(done)

    def renamed_from(self, path: Path) -> Path | None:
        """Where the file at ``path`` was in this tree, if the change renamed it (git's rename detection)."""
        rel = self.relative(path)
        rows = _git(self.top, "diff", "-z", "--name-status", "-M", self.commit)
        fields, i = ([] if rows is None or rel is None else os.fsdecode(rows).split("\0")), 0
        while i + 1 < len(fields):  # status, path; a rename or copy: status, old, new
            two = fields[i][:1] in ("R", "C")
            if two and i + 2 < len(fields) and fields[i + 2] == rel:
                return self.top / fields[i + 1]
            i += 3 if two else 2
        return None

    def resolve(self, path: Path) -> Path:
        name = self._name(path)
        return path if name is None else self.top / name

    def _name(self, path: Path | str) -> str | None:
        """``path``'s name in the tree, its links followed; None outside it."""
        rel = self.relative(path)
        return None if rel is None else self._resolve(rel)

    def _blob(self, name: str | None) -> bool:
        return name is not None and self.entries.get(name, ("",))[0].startswith("100")  # a file, not a link

    def _file(self, path: Path | str) -> str | None:
        name = self._name(path)
        return name if self._blob(name) else None

    def is_file(self, path: Path) -> bool:
        return self._file(path) is not None

    def read_text(self, path: Path) -> str:
        name = self._file(path)
        shown = None if name is None else _git(self.top, "cat-file", "blob", self.entries[name][1])
        if shown is None:
            raise FileNotFoundError(f"no file `{path}` at {self.commit}")
        return shown.decode("utf-8")

    def glob(self, pattern: str) -> list[str]:
        """As ``glob.glob`` (no ``**`` recursion), through the tree's folders and links."""
        rel = self.relative(pattern)
        if rel is None:
            return []
        reached = [("", "")]  # (as written, the tree's folder)
        for part in rel.split("/") if rel != "." else []:
            magic = any(c in part for c in "*?[")
            step = []
            for written, real in reached:
                names = sorted(c for c in self.children.get(real, ()) if fnmatch.fnmatchcase(c, part)
                               and (part.startswith(".") or not c.startswith("."))) if magic else [part]
                for c in names:
                    resolved = self._resolve(f"{real}/{c}" if real else c)
                    if resolved is not None:
                        step.append((f"{written}/{c}" if written else c, resolved))
            reached = step
        return [str(self.top / w) for w, r in reached if self._blob(r)]


def _git(folder: Path, *args: str) -> bytes | None:
    try:
        proc = subprocess.run(["git", *args], cwd=folder, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None

"""What the change under check does to the config that judges it (``check --changed-since``): each model
that passes is judged again, on the same run and baseline, under the config at the base: the file that judged
there (``--config``'s path or where the change renamed it from, else the one the search finds there), read
with every file it names from the base's tree (its links followed), as the change's is read from disk. Where
it fails there, it passes only under limits the change loosened (a tolerance raised, a layer rule added, a
sweep's pair limit, a slowdown allowed); a provider the base checks and the change dropped (or a sweep's skip
keeps off a case) goes unchecked. Both are said on the model (``ModelVerdict.loosened``), never taken
silently; the verdict stays the change's own; models and cases the change stopped checking are said on the
report (``unchecked``). A base config that cannot be read is said too, never read as "nothing loosened"."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from dataclasses import asdict, replace
from pathlib import Path, PurePosixPath

from gate.commands.common import policy, update_command
from gate.config import Config, Files, ModelSpec, config_in, load_config
from gate.config.types import LayerTolerance
from gate.core.runs import ModelRun
from gate.core.status import ModelStatus
from gate.errors import ConfigError
from gate.formats.baseline import Baseline
from gate.verdict.checks import layout
from gate.verdict.judge import model_verdict
from gate.verdict.notes import Comparison
from gate.verdict.types import Loosened, ModelVerdict


def base_config(config: Config, since: str, search: Path | None) -> Config | str | None:
    """The config as it was at ``since``: the file the search from ``search`` up finds there (as
    ``find_config`` searched), or this one's path (None: it was named with --config); None where the base
    has none (a new one: nothing was loosened) or the same one; the reason where it does not load."""
    tree = _Tree.at(config.path.resolve().parent, since)
    if tree is None:
        return f"tree at {since} could not be read"
    path: Path | None = config.path if search is None else None
    if path is not None and not tree.is_file(path):  # a --config file the change renamed: what it was
        path = tree.renamed_from(path)
    if path is None:
        start = search or config.path.parent
        for folder in (start, *start.parents):
            path = config_in(folder, tree)
            if path is not None or tree.relative(folder) in (None, "."):
                break
    if path is None:
        return None
    try:
        base = load_config(path, files=tree)
    except ConfigError as exc:
        return f"{path.name} at {since} does not load here ({exc})"
    return None if base == config else base


class _Tree(Files):
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
    def at(cls, folder: Path, commit: str) -> _Tree | None:
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
        rel = self.relative(path)
        name = None if rel is None else self._resolve(rel)
        return path if name is None else self.top / name

    def _file(self, path: Path | str) -> str | None:
        rel = self.relative(path)
        name = None if rel is None else self._resolve(rel)
        return name if name is not None and self.entries.get(name, ("",))[0].startswith("100") else None

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
        return [str(self.top / w) for w, r in reached if self.entries.get(r, ("",))[0].startswith("100")]


def _git(folder: Path, *args: str) -> bytes | None:
    try:
        proc = subprocess.run(["git", *args], cwd=folder, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


# spec, run, baseline, the baseline's path, verdict
Judged = tuple[ModelSpec, ModelRun, Baseline | None, str, ModelVerdict]


def mark(config: Config, base: Config | str, judged: list[Judged],
         compared: dict[str, list[Comparison]]) -> None:
    """Set ``loosened`` on each model whose judgment the change's config loosened (``compared``: the
    sweeps' pairs and anchors under the base's config)."""
    if isinstance(base, str):
        for *_, verdict in judged:
            verdict.loosened = Loosened(unread=base)
        return
    specs = {spec.name: spec for spec in base.models}
    kept, names = {(q.name, q.precision) for q in config.providers}, {q.name for q in config.providers}
    # a provider is its name and its precision: torch-cpu's float32 run dropped beside its bfloat16 one
    dropped = tuple(f"{p.name}:{p.precision}" if p.name in names else p.name for p in base.providers
                    if (p.name, p.precision) not in kept)
    for spec, run, baseline, path, verdict in judged:
        was = specs.get(spec.name)
        if verdict.status != ModelStatus.PASS or was is None:
            continue
        again = model_verdict(_renamed(was, run, baseline, spec), run, baseline, path,
                              update_command(spec, config), policy(base), compared.get(spec.name))
        first = again.first_regression if again.status == ModelStatus.REGRESSED else None
        # a sweep's skip the change added keeps a provider off this case: dropped for it alone
        skipped = tuple(p.name for p in config.providers if p.name not in dropped
                        and config.skip_reason(spec.name, p.name) and not base.skip_reason(spec.name, p.name))
        if first is not None or dropped or skipped:
            verdict.loosened = Loosened(first, dropped + skipped)


def unchecked(config: Config, base: Config) -> list[str] | None:
    """Models and sweep cases the base's config checks and the change's does not (a model's table removed,
    a sweep's case dropped from its values): nothing judges them now, and their baselines stay."""
    kept = {spec.name for spec in config.models}
    return [spec.name for spec in base.models if spec.name not in kept] or None


def _renamed(was: ModelSpec, run: ModelRun, baseline: Baseline | None, spec: ModelSpec) -> ModelSpec:
    """The base's spec, its layer rules following the layers the structure matched to other names (a rule
    renamed with its module holds what it held): each renamed layer gets the base's limits of the name the
    baseline knows it by."""
    if baseline is None or not run.layers or not was.layer_tolerances:
        return was
    st = layout(run, baseline, spec)
    rules = []
    for layer in run.layers:
        own = st.own(layer.name)
        if own != layer.name:
            limits, under = asdict(was.tolerance_for(own)), asdict(was.tolerance_for(layer.name))
            moved = {k: v for k, v in limits.items() if v != under[k]}
            if moved:
                rules.append(LayerTolerance(_literal(layer.name), moved))
    return replace(was, layer_tolerances=(*was.layer_tolerances, *rules))


def _literal(name: str) -> str:
    """A glob that matches ``name`` alone (layer names hold brackets)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in name)

"""The baseline files a change rewrites, as a reviewer reads them: per file, the summary
``update-baseline`` prints, then each changed line of ``parity-gate show`` (old above new, up to
``MAX_LAYERS`` layers). ``show`` rounds to the reference's noise, so only layers that moved beyond it
appear; the report carries these texts so a pull request's comment needs no git diff driver."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from gate.config import Config
from gate.errors import FormatError
from gate.formats.baseline import Baseline, describe, read_document
from gate.formats.baseline.changes import limits_loosened, renames
from gate.formats.baseline.names import SUFFIX
from gate.formats.baseline.sets import read_set
from gate.formats.baseline.show import quoted, render_file

MAX_LAYERS = 20  # layers shown per file, then "N more"
MAX_CHARS = 12_000  # all files together, shared equally: one file's size never hides another's summary
MAX_LEFT = 64  # files no model owns now, read to find the one a new file was recorded as before


def baseline_diffs(config: Config, since: str, paths: list[str], orphans: list[Path]) -> dict[str, str]:
    """``{path: text}`` for the changed baseline files ``paths`` (relative to the repository's top, as
    ``baseline_changes`` lists them); a file that cannot be read shows its error as text. ``orphans``: the
    baseline files no configured model owns now."""
    top = repo_top(config.root)
    out: dict[str, str] = {}
    share = MAX_CHARS // max(len(paths), 1)
    left = {p.resolve() for p in orphans}
    for path in paths:
        with tempfile.TemporaryDirectory() as folder:
            was, before = _before(top, since, path, left, Path(folder))
            after = top / path
            text = change_text(before, after if after.is_file() else None, more=f"git diff {since} -- {path}")
            text = text.replace(f"{top}{os.sep}", "")  # an error names the file as the runner's path
            text = f"moved from {was}\n{text}" if was and was != path else text
        out[path] = text if len(text) <= share else f"{text[:share]}\n… cut: git diff {since} -- {path}"
    return out


def loosened_files(config: Config, since: str, paths: list[str], orphans: list[Path]) -> list[str]:
    """Those of the changed baseline files ``paths`` whose new numbers let a check pass by more than the old
    ones did (``limits_loosened``: a calibrated noise grown, a precision coarsened, a latency raised)."""
    top = repo_top(config.root)
    left, out = {p.resolve() for p in orphans}, []
    for path in paths:
        with tempfile.TemporaryDirectory() as folder:
            _, before = _before(top, since, path, left, Path(folder))
            try:
                old, new = _cases(before) if before is not None else {}, _cases(top / path)
            except (FormatError, OSError):  # a file gone or unreadable judges nothing: said as such
                continue
        if any(case in old and limits_loosened(old[case], b) for case, b in new.items()):
            out.append(path)
    return out


def _before(top: Path, since: str, path: str, left: set[Path],
            folder: Path) -> tuple[str | None, Path | None]:
    """Where ``path`` was at ``since`` (itself, or the file it was recorded as: ``_moved_from``), and a
    copy of it in ``folder``."""
    was = path if exists_at(top, since, path) else _moved_from(top, since, path, left)
    return was, _at(top, since, was, folder) if was else None


def change_text(before: Path | None, after: Path | None, more: str) -> str:
    """What moved from the baseline file ``before`` to ``after`` (None: there is none), summary first;
    ``more``: where the rest is, named after the last layer shown."""
    try:
        new = render_file(after) if after is not None else ""
    except (FormatError, OSError) as exc:  # nothing to set the old file against line by line: what is wrong
        return f"unreadable: {exc}"
    old = _text(before)
    lines = _summary(before, after)
    layers = hidden = 0
    was, now = _renamed(before, after)
    for key, gone, line in _changed(old, new):
        shown = ([f"-{gone}"] if gone is not None and key not in was else []) + \
                ([f"+{line}"] if line is not None and key not in now else [])
        if shown and key[1].startswith("layer "):  # a rename the summary says is no line of its own
            layers += 1
            if layers > MAX_LAYERS:
                hidden += 1
                continue
        lines += shown
    if hidden:
        lines.append(f"… {hidden} more layer{'s' * (hidden != 1)} changed: {more}")
    return "\n".join(lines)


def _renamed(before: Path | None, after: Path | None) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The line keys (``_keyed``) of the layers the summary says were renamed: of their old names, of their
    new ones (the pairs of ``renames``, per case)."""
    try:
        new, old = _cases(after) if after else {}, _cases(before) if before else {}
    except (FormatError, OSError):
        return set(), set()
    was: set[tuple[str, str]] = set()
    now: set[tuple[str, str]] = set()
    for case, baseline in new.items():
        head = f"case {quoted(case)}" if case else ""
        for a, b in renames(old[case], baseline) if case in old else []:
            was.add((head, f"layer {quoted(a)}"))
            now.add((head, f"layer {quoted(b)}"))
    return was, now


def _summary(before: Path | None, after: Path | None) -> list[str]:
    """``update-baseline``'s lines for the change (per case for a baseline set); none where a side cannot
    be read (its error shows in the lines below)."""
    if after is None:
        return ["baseline deleted"]
    try:
        new = _cases(after)
        old = _cases(before) if before is not None else {}
    except (FormatError, OSError):
        return []
    lines = []
    for case, baseline in new.items():
        said = describe(old.get(case), baseline)
        lines += [f"{case}: {line}" if case else line for line in said if not (case and line == "no change")]
    return lines or ["no change"]


def _cases(path: Path) -> dict[str, Baseline]:
    try:
        return {"": Baseline.from_document(read_document(path))}
    except FormatError as not_a_baseline:
        try:
            return {name: Baseline.from_document(case) for name, case in read_set(path)["cases"].items()}
        except FormatError:
            raise not_a_baseline from None


def _changed(old: str, new: str) -> list[tuple[tuple[str, str], str | None, str | None]]:
    """``(key, old line, new line)`` for each line whose text changed, in the new file's order, then the
    lines only the old one has. A line's key: its case and the words that name what it is about."""
    before, after = _keyed(old), _keyed(new)
    out = [(key, before.get(key), line) for key, line in after.items() if before.get(key) != line]
    return out + [(key, line, None) for key, line in before.items() if key not in after]


def _keyed(text: str) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    case = ""
    for line in text.splitlines():
        words = line.split(" ")
        if words[0] == "case":
            case = line
        about = 3 if words[0] in ("provider", "placement", "statuses") else 2  # these name provider and class
        out[(case, " ".join(words[:about]))] = line
    return out


def repo_top(root: Path) -> Path:
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True, timeout=30)
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else root


def _text(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return render_file(path)
    except (FormatError, OSError) as exc:
        return f"invalid baseline: {exc}\n"


def exists_at(top: Path, rev: str, path: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], cwd=top, capture_output=True,
                          timeout=60).returncode == 0


def _moved_from(top: Path, rev: str, path: str, orphans: set[Path]) -> str | None:
    """Where a file that did not exist at ``rev`` was recorded before, so its diff is against the numbers
    it had, never a "new baseline": the one file of the same name there (a ``baseline-dir`` moved), else the
    one file there that no configured model owns now (deleted, or left behind) recording the same inputs and
    layers (the model renamed, or run as a case, and recorded again)."""
    listed = _listing(top, rev)
    named = same_name(listed, path)
    if named is not None:
        return named
    now = _recorded(top / path)
    left = [p for p in listed
            if p.endswith(SUFFIX) and (not (top / p).is_file() or (top / p).resolve() in orphans)]
    if now is None or len(left) > MAX_LEFT:
        return None
    with tempfile.TemporaryDirectory() as folder:
        same = [p for p in left if _recorded(_at(top, rev, p, Path(folder))) == now]
    return same[0] if len(same) == 1 else None


def _listing(top: Path, rev: str) -> list[str]:
    # -z: paths as they are (git quotes one with non-ASCII characters otherwise)
    proc = subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", rev], cwd=top, capture_output=True,
                          text=True, timeout=60)
    return [p for p in proc.stdout.split("\0") if p] if proc.returncode == 0 else []


def same_name(listed: list[str], path: str) -> str | None:
    """The one file of ``listed`` named as ``path`` is: where it was before a ``baseline-dir`` moved."""
    named = [p for p in listed if Path(p).name == Path(path).name]
    return named[0] if len(named) == 1 else None


def moved_dir_file(top: Path, rev: str, path: str, model: str) -> str | None:
    """Where ``path``, new since ``rev``, was at ``rev`` if only its folder moved (``same_name``), the file
    left there and still recording ``model``."""
    was = same_name(_listing(top, rev), path) if not exists_at(top, rev, path) else None
    try:
        left = Baseline.from_document(read_document(top / was)) if was is not None else None
    except (FormatError, OSError):  # gone, or unreadable: nothing to move
        return None
    return was if left is not None and left.model == model else None


def _recorded(path: Path | None) -> tuple[str | None, tuple[str, ...]] | None:
    """What a model's baseline was recorded from: its inputs and its layers (None: a set, or unreadable)."""
    try:
        baseline = Baseline.from_document(read_document(path)) if path is not None else None
    except (FormatError, OSError):
        return None
    return None if baseline is None else (baseline.meta.inputs_digest, tuple(x.name for x in baseline.layers))


def _at(top: Path, rev: str, path: str, folder: Path) -> Path | None:
    """The file as it was at ``rev``, copied into ``folder``; None when it did not exist there."""
    proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=top, capture_output=True, timeout=60)
    if proc.returncode != 0:
        return None
    old = folder / Path(path).name
    old.write_bytes(proc.stdout)
    return old

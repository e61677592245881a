"""Where a model's baseline lives, and reading and rewriting it there: a model's own file, or its
sweep's set file (``sets``). Commands go through ``Location`` and never need to know which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from gate.errors import FormatError, NewerFormat

from ..atomic import baseline_lock
from .codec import read_baseline, write_baseline
from .document import Baseline
from .names import baseline_path
from .sets import empty_set, read_set, write_set

T = TypeVar("T")


@dataclass(frozen=True)
class Location:
    path: Path
    case: str | None = None  # the case's key in a sweep's set file; None: a file of its own
    sweep: str | None = None

    @classmethod
    def of(cls, baseline_dir: Path, model: str, sweep: str | None = None) -> Location:
        """ConfigError (from ``baseline_path``) unless the names are valid file names."""
        if sweep is None:
            return cls(baseline_path(baseline_dir, model))
        baseline_path(baseline_dir, model)  # the case name obeys the same rule
        return cls(baseline_path(baseline_dir, sweep), model, sweep)

    def __str__(self) -> str:
        return str(self.path) if self.case is None else f"{self.path}[{self.case}]"


def read(loc: Location) -> Baseline:
    """The case's validated baseline. FileNotFoundError when the file, or the case in its set, is
    missing; FormatError when the file is unreadable."""
    if loc.case is None:
        return read_baseline(loc.path)
    cases = read_set(loc.path)["cases"]
    if loc.case not in cases:
        raise FileNotFoundError(f"{loc.path} holds no case `{loc.case}`")
    return Baseline.from_document(cases[loc.case])


def read_cases(path: Path) -> dict[str, Baseline]:
    """Every case of a sweep's set file, read once. FileNotFoundError, FormatError as ``read``."""
    return {name: Baseline.from_document(case) for name, case in read_set(path)["cases"].items()}


def update(loc: Location, make: Callable[[Baseline | None], Baseline],
           keep: Callable[[Baseline], bool]) -> Baseline | None:
    """Under the folder's lock, re-read the baseline (None when missing, unreadable, or refused by
    ``keep``), write ``make(previous)`` in its place and return the previous baseline. In a set
    file only this case changes; the other cases that ``keep`` accepts are written back as read
    (a set that cannot be read is started anew: its cases would be re-created by the next update
    of each)."""
    loc.path.parent.mkdir(parents=True, exist_ok=True)
    with baseline_lock(loc.path):  # a concurrent update of other providers or cases must not be lost
        if loc.case is None:
            previous = _kept(_readable(lambda: read_baseline(loc.path)), keep)
            write_baseline(loc.path, make(previous))
            return previous
        doc = _readable(lambda: read_set(loc.path)) or empty_set(loc.sweep or loc.path.name)
        cases = {name: Baseline.from_document(case) for name, case in doc["cases"].items()}
        previous = _kept(cases.get(loc.case), keep)
        doc["cases"] = {name: case for name, case in doc["cases"].items() if keep(cases[name])}
        doc["cases"][loc.case] = make(previous).to_document()
        write_set(loc.path, doc)
        return previous


def _kept(baseline: Baseline | None, keep: Callable[[Baseline], bool]) -> Baseline | None:
    return baseline if baseline is not None and keep(baseline) else None


def _readable(read_fn: Callable[[], T]) -> T | None:
    """What ``read_fn`` reads; None where nothing or nothing valid is there. A newer parity-gate's file is
    never replaced: re-recording would drop what it holds (``NewerFormat``)."""
    try:
        return read_fn()
    except NewerFormat:
        raise
    except (FileNotFoundError, FormatError):
        return None


def refuse_newer(loc: Location) -> None:
    """Raise ``NewerFormat`` where the file at ``loc`` was written by a newer parity-gate (before any run)."""
    _readable(lambda: read_baseline(loc.path) if loc.case is None else read_set(loc.path))

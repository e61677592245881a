"""The legs of a sharded run as the judging job finds them: one downloaded report artifact folder per
leg, ``<name>-shard-K-of-N-a<attempt>``, of which each shard's latest attempt counts. Each report is
read as untrusted (``load_report``); ``gate.verdict.merge`` does the rest.
"""

from __future__ import annotations

import re
from pathlib import Path

from gate.errors import GateError
from gate.verdict.merge import Leg
from gate.verdict.report_file import load_report

ARTIFACT = re.compile(r".+-shard-(?P<index>[0-9]{1,4})-of-(?P<count>[0-9]{1,4})-a(?P<attempt>[0-9]{1,9})\Z")
MAX_ARTIFACTS = 4096  # many attempts of many legs; past it, something uploads artifacts on purpose
MAX_TOTAL = 1024 * 2**20  # the reports merged, together (each is capped by load_report too)
REPORT = "report.json"


def _report_file(folder: Path) -> Path:
    """The artifact's report: its ``report.json``, else its one JSON file."""
    if (folder / REPORT).is_file() and not (folder / REPORT).is_symlink():
        return folder / REPORT
    found = [p for p in folder.glob("*.json") if p.is_file() and not p.is_symlink()]
    if len(found) != 1:
        raise GateError(f"artifact `{folder.name}`: holds {'no' if not found else len(found)} JSON report"
                        f"{'s' * (len(found) > 1)} (expected {REPORT})")
    return found[0]


def latest_folders(folder: Path, count: int, thing: str = "report") -> dict[int, Path]:
    """Each shard's latest artifact folder in ``folder`` (``thing``: what the legs upload)."""
    if not folder.is_dir():
        raise GateError(f"`{folder}`: no folder of the legs' {thing} artifacts")
    entries = sorted(folder.iterdir())
    if len(entries) > MAX_ARTIFACTS:
        raise GateError(f"`{folder}`: {len(entries):,} artifacts (limit {MAX_ARTIFACTS:,})")
    found: dict[int, dict[int, list[Path]]] = {}  # shard -> attempt -> its artifacts
    for path in entries:
        m = ARTIFACT.match(path.name)
        if m is None or not path.is_dir() or path.is_symlink():
            raise GateError(f"`{path.name}` in `{folder}`: not a leg's {thing} artifact "
                            "(a folder <name>-shard-K-of-N-a<attempt>)")
        index, of, attempt = int(m["index"]), int(m["count"]), int(m["attempt"])
        if of != count or not 1 <= index <= count:
            raise GateError(f"artifact `{path.name}`: a leg of shard {index}/{of}; this merge expects {count} shards")
        found.setdefault(index, {}).setdefault(attempt, []).append(path)
    folders: dict[int, Path] = {}
    for index, attempts in sorted(found.items()):
        attempt = max(attempts)
        if len(attempts[attempt]) > 1:
            first, second = attempts[attempt][:2]
            raise GateError(f"shard {index}/{count} has two {thing} artifacts of attempt {attempt}: "
                            f"`{first.name}` and `{second.name}`")
        folders[index] = attempts[attempt][0]
    return folders


def latest(folder: Path, count: int) -> list[Leg]:
    files = {index: _report_file(path) for index, path in latest_folders(folder, count).items()}
    total = sum(f.stat().st_size for f in files.values())
    if total > MAX_TOTAL:
        raise GateError(f"`{folder}`: the legs' reports hold {total:,} bytes together (limit {MAX_TOTAL:,})")
    legs = []
    for index, file in files.items():
        path = file.parent
        leg = Leg(path.name, load_report(file))
        said = leg.report.shard  # None: merge() refuses it, naming the artifact
        if said is not None and said.shard.index != index:
            raise GateError(f"artifact `{path.name}` holds the report of shard {said.shard}, not of shard {index}/{count}")
        legs.append(leg)
    return legs

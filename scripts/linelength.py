"""Line length (``line-length`` in pyproject.toml, 110) held to a ratchet: each Python file under gate/,
tests/ and scripts/ may have at most as many longer lines as ``scripts/line-length-baseline.txt``
lists for it (``count path``, one a line); a file not listed may have none. A file that grows past its
count fails; ``--update`` rewrites the baseline to what is left, so it only shrinks.

    python scripts/linelength.py [--update]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "line-length-baseline.txt"
FOLDERS = ("gate", "tests", "scripts")


def limit() -> int:
    return int(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["line-length"])


def counts(width: int) -> dict[str, int]:
    """path -> its lines longer than ``width`` characters, for every file that has any."""
    out = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            n = sum(len(line) > width for line in path.read_text(encoding="utf-8").splitlines())
            if n:
                out[path.relative_to(ROOT).as_posix()] = n
    return out


def read_baseline() -> dict[str, int]:
    if not BASELINE.is_file():
        return {}
    out = {}
    for line in BASELINE.read_text().splitlines():
        count, _, path = line.partition(" ")
        out[path] = int(count)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true",
                    help="rewrite the baseline to the long lines left now")
    args = ap.parse_args()
    width, found, allowed = limit(), counts(limit()), read_baseline()
    first = not BASELINE.is_file()  # the ratchet starts where the code is
    grown = {} if first else {p: n for p, n in found.items() if n > allowed.get(p, 0)}
    fixed = sum(allowed.values()) - sum(min(n, allowed.get(p, 0)) for p, n in found.items())
    for path, n in grown.items():
        print(f"{path}: {n} lines over {width} characters (the baseline allows {allowed.get(path, 0)})")
    if args.update and not grown:
        BASELINE.write_text("".join(f"{n} {p}\n" for p, n in sorted(found.items())))
        print(f"linelength: baseline rewritten: {sum(found.values())} lines over {width}")
        return 0
    if grown:
        print(f"linelength: {len(grown)} file(s) gained lines over {width} characters: wrap them", file=sys.stderr)
        return 1
    tail = f"; {fixed} fixed since: run `python scripts/linelength.py --update`" if fixed else ""
    left = sum(found.values())
    print(f"linelength: no file gained long lines ({left} over {width} left in the baseline{tail})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

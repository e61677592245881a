"""mypy --strict on gate/, held to a ratchet: the errors must be exactly those ``scripts/mypy-baseline.txt``
lists (one a line, ``path: [code] message``, without line numbers, so an edit that moves lines moves
nothing), each as many times as it is listed. A new error fails, also one with the same message as a
listed one; so does an error fixed but still listed (its line would let a new one in), until
``--update`` rewrites the baseline to what is left: it only shrinks.

    python scripts/typecheck.py [--update]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*?)\s+\[(?P<code>[a-z-]+)\]$")


def errors() -> list[tuple[str, str]]:
    """(``path: [code] message``, the line as mypy printed it) for each error."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "gate"], cwd=ROOT, capture_output=True, text=True)
    out = []
    for line in proc.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            out.append((f"{m['path']}: [{m['code']}] {m['message']}", line))
    if proc.returncode == 2 or (proc.returncode == 1 and not out):  # mypy itself failed: no verdict on the code
        raise SystemExit(f"mypy failed to run ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite the baseline to the errors left now")
    args = ap.parse_args()
    found = errors()
    now = Counter(key for key, _ in found)
    if args.update:
        BASELINE.write_text("".join(f"{key}\n" for key in sorted(now.elements())))
        print(f"typecheck: baseline rewritten: {sum(now.values())} errors")
        return 0
    allowed = Counter(line for line in BASELINE.read_text().splitlines() if line.strip())
    new = now - allowed
    if new:
        print(f"typecheck: {sum(new.values())} new mypy --strict error(s) in gate/ (fix them; the baseline only shrinks):")
        for key, line in found:
            if new[key] > 0:
                print(f"  {line}")
                new[key] -= 1
        return 1
    fixed = allowed - now
    if fixed:
        print(f"typecheck: {sum(fixed.values())} error(s) the baseline lists are fixed; run "
              "`python scripts/typecheck.py --update` and commit the baseline:")
        for key, count in sorted(fixed.items()):
            print(f"  {key}" + (f" (x{count})" if count > 1 else ""))
        return 1
    print(f"typecheck: no new errors ({sum(now.values())} left in the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Baseline approval turned on in workflows ``init`` wrote before, in place (``init --require-approval``
on a repository set up without it): the judging step gets ``baseline-changes: require-approval`` and a
label or a review runs the gate again. Every other line of the file stays as it is; the result is what
``init --require-approval`` writes for the same flow (a test holds the two together)."""

from __future__ import annotations

import re

from gate.scaffold.add import action_steps

SETTING = "baseline-changes: require-approval"
_RERUN = ("labeled", "unlabeled")  # a label allows a pull request: it must run the gate again
_REVIEW = "  pull_request_review:\n    types: [submitted, dismissed]\n"
_TYPES = re.compile(r"^(?P<head>    types:\s*\[)(?P<items>[^\]]*)\](?P<tail>.*)$")


def requires_approval(text: str) -> bool:
    return any(line.strip().startswith("baseline-changes:") and "require-approval" in line
               for line in text.splitlines())


def with_approval(text: str) -> str:
    """``text`` (a workflow) requiring approval of baseline changes: its judging steps (``mode: comment``)
    enforce it, and its pull request events include labels (and reviews). Unchanged when it uses no
    parity-gate step; idempotent."""
    lines = text.splitlines(keepends=True)
    steps = action_steps(lines)
    if not steps:
        return text
    judges = ([] if requires_approval(text)
              else [(start, end) for start, end, mode in steps if mode == "comment"])
    for start, end in reversed(judges):
        with_at = next((i for i in range(start + 1, end) if lines[i].strip() == "with:"), None)
        dash = len(lines[start]) - len(lines[start].lstrip())
        if with_at is None:
            lines[end:end] = [" " * (dash + 2) + "with:\n", " " * (dash + 4) + SETTING + "\n"]
            continue
        last = max(i for i in range(with_at, end) if lines[i].strip())
        indent = len(lines[with_at]) - len(lines[with_at].lstrip()) + 2
        lines[last + 1:last + 1] = [" " * indent + SETTING + "\n"]
    return _triggers(lines)


def _triggers(lines: list[str]) -> str:
    """The pull request events with labels (and, for ``pull_request``, reviews) added."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        event = line.rstrip("\n").split("#")[0].rstrip()
        if event not in ("  pull_request:", "  pull_request_target:"):
            continue
        typed = _TYPES.match(lines[i].rstrip("\n")) if i < len(lines) else None
        if typed is None:
            out.append("    types: [opened, synchronize, reopened, labeled, unlabeled]\n")
        else:
            items = [x.strip() for x in typed["items"].split(",") if x.strip()]
            items += [x for x in _RERUN if x not in items]
            out.append(f"{typed['head']}{', '.join(items)}]{typed['tail']}\n")
            i += 1
        if event == "  pull_request:" and not any(x.startswith("  pull_request_review:") for x in lines):
            out.append(_REVIEW)
    return "".join(out)

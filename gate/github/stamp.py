"""What a comment judged: the commit, and the workflow run (and attempt) that computed the report.
A run updates the comment only when its stamp is not older than the one there, so a late run never
replaces a newer commit's result (run ids grow in creation order; a re-run counts up its attempt).
In the fork-safe flow the stamp is that of the ``pull_request`` run that computed the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gate.github.actions import ActionsEnv
from gate.github.event import PR_EVENTS

_LINE = re.compile(r"<!-- parity-gate:run id=(\d{1,20}) attempt=(\d{1,6}) sha=([0-9a-f]{0,64}) -->")


@dataclass(frozen=True)
class RunStamp:
    run_id: int
    attempt: int
    sha: str
    url: str | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.run_id, self.attempt)

    def line(self) -> str:
        return f"<!-- parity-gate:run id={self.run_id} attempt={self.attempt} sha={self.sha} -->"

    def label(self) -> str:
        return f"run {self.run_id}" + (f", attempt {self.attempt}" if self.attempt > 1 else "")


def _int(value: Any) -> int:
    try:
        return max(0, int(str(value)))
    except ValueError:
        return 0


def _sha(value: Any) -> str:
    text = str(value or "").lower()
    return text if re.fullmatch(r"[0-9a-f]{7,64}", text) else ""


def stamp_for(env: ActionsEnv, event: dict[str, Any]) -> RunStamp | None:
    """The run that computed the report: the triggering ``pull_request`` run in a ``workflow_run``
    workflow (from the event, which GitHub writes; never from the report, which a fork could write),
    else this run; the commit is the pull request's head, not the merge commit that was checked out."""
    if env.event_name == "workflow_run":
        run = event.get("workflow_run") or {}
        if not _int(run.get("id")):
            return None
        return RunStamp(_int(run.get("id")), _int(run.get("run_attempt")) or 1, _sha(run.get("head_sha")),
                        run.get("html_url") if isinstance(run.get("html_url"), str) else None)
    if not _int(env.run_id):
        return None
    sha = (_sha(((event.get("pull_request") or {}).get("head") or {}).get("sha"))
           if env.event_name in PR_EVENTS else "")
    return RunStamp(_int(env.run_id), _int(env.run_attempt) or 1, sha or _sha(env.sha), env.run_url)


def parse_stamp(body: str) -> RunStamp | None:
    found = _LINE.search(body or "")
    return RunStamp(int(found[1]), int(found[2]), found[3]) if found else None


def is_newer(existing: RunStamp | None, ours: RunStamp | None) -> bool:
    """Whether a comment stamped ``existing`` holds a later run's result than ``ours``."""
    return existing is not None and ours is not None and existing.key > ours.key

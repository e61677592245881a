"""A pull request as the API tells it (never as a report or an artifact does): its author, head, base,
labels and changed files. ``GET /pulls/{n}/files`` lists at most 3,000 files: a pull request whose
list is cut short cannot be judged, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.errors import GateError
from gate.github.client import GitHubClient, GitHubError

FILES_CAP = 3000  # what GET /pulls/{n}/files lists at most


class ChangesUnknown(GateError):
    """The baseline files a pull request changes cannot be listed: the run fails closed (exit 2)."""


@dataclass(frozen=True)
class Pull:
    number: int
    repository: str  # owner/name of the base repository
    author: str  # login of who opened it
    head_sha: str
    head_repo: str  # owner/name the head branch lives in ("" when that repository is gone)
    head_ref: str  # the head branch
    base_sha: str = ""  # the base branch's commit the pull request is compared with
    labels: tuple[str, ...] = ()
    changed_files: int | None = None  # GitHub's count; None when it gave none (the list cannot be checked complete)

    def is_author(self, login: str) -> bool:
        return login.lower() == self.author.lower()  # logins are case-insensitive


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def fetch_pull(client: GitHubClient, repo: str, number: int) -> Pull:
    """The pull request ``number`` of ``repo`` (GitHubError when the API does not answer)."""
    data = _obj(client.get(f"/repos/{repo}/pulls/{number}"))
    head, user = _obj(data.get("head")), _obj(data.get("user"))
    labels = data.get("labels") if isinstance(data.get("labels"), list) else []
    changed = data.get("changed_files")
    return Pull(number, repo, _text(user.get("login")), _text(head.get("sha")), _text(_obj(head.get("repo")).get("full_name")),
                _text(head.get("ref")), _text(_obj(data.get("base")).get("sha")),
                tuple(_text(lab.get("name")) for lab in labels if isinstance(lab, dict)),
                changed if isinstance(changed, int) and not isinstance(changed, bool) and changed >= 0 else None)


def changed_paths(client: GitHubClient, pull: Pull) -> list[str]:
    """Every file the pull request adds, changes, renames or deletes (both names of a rename), from the
    API. ChangesUnknown when the list is incomplete or the API fails."""
    where = f"the files pull request #{pull.number} changes"
    if pull.changed_files is None:
        raise ChangesUnknown(f"{where}: GitHub gave no count of them (changed_files), so whether its list is complete "
                             "cannot be told")
    if pull.changed_files > FILES_CAP:
        raise ChangesUnknown(f"{where}: {pull.changed_files:,} files, and GitHub lists at most {FILES_CAP:,}; the "
                             "baseline files it changes cannot be told: split the pull request")
    found: set[str] = set()
    listed = 0
    try:
        for item in client.paginate(f"/repos/{pull.repository}/pulls/{pull.number}/files"):
            listed += 1
            if isinstance(item, dict):
                found.update(name for name in (_text(item.get("filename")), _text(item.get("previous_filename")))
                             if name)
    except GitHubError as e:
        raise ChangesUnknown(f"{where} cannot be read ({e.status or 'no response'} {e.message}): give the job a token "
                             "that can read the pull request (github-token, with pull-requests: read)") from None
    if listed < pull.changed_files:
        raise ChangesUnknown(f"{where}: GitHub listed {listed:,} of {pull.changed_files:,}; the baseline files it "
                             "changes cannot be told")
    return sorted(found)

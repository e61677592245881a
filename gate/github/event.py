"""Which pull request a run is about, from the event payload (and the API for workflow_run)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gate.errors import FormatError
from gate.github.client import GitHubClient

# Events whose payload holds the pull request (a review re-runs the gate, e.g. to see an approval).
PR_EVENTS = ("pull_request", "pull_request_target", "pull_request_review")


@dataclass(frozen=True)
class PullRequest:
    number: int
    repository: str  # owner/name of the base repository (where the comment goes)
    how: str  # how it was found, for the log


@dataclass(frozen=True)
class NoPullRequest:
    reason: str


def load_event(path: str) -> dict[str, Any]:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise FormatError(f"event payload `{path}` (GITHUB_EVENT_PATH): no such file") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise FormatError(f"event payload `{path}` (GITHUB_EVENT_PATH): not JSON ({e})") from None
    return data if isinstance(data, dict) else {}


def resolve_pull_request(event_name: str, event: dict[str, Any], repository: str, client: GitHubClient | None,
                         explicit: int | None = None, sha: str = "") -> PullRequest | NoPullRequest:
    """The PR for this run: the event's (a pull request event), the one open pull request whose head is
    the run's commit (workflow_run: a number given must be that one), else a number given, which must be
    the one open pull request at its head (and at ``sha``, the run's commit, where given)."""
    repo = (event.get("repository") or {}).get("full_name") or repository
    if event_name in PR_EVENTS:
        number = (event.get("pull_request") or {}).get("number") or event.get("number")
        if not isinstance(number, int):
            return NoPullRequest(f"the {event_name} event payload has no pull request number")
        if explicit and explicit != number:
            return NoPullRequest(f"pull request #{explicit} was given, and this {event_name} event is about "
                                 f"#{number}: not commenting there")
        return PullRequest(number, repo, f"{event_name} event")
    if event_name == "workflow_run":
        return _from_workflow_run(event.get("workflow_run") or {}, repo, client, explicit)
    if explicit:
        return _given(client, repo, explicit, sha)
    return NoPullRequest(f"event `{event_name or 'unknown'}` is not about a pull request")


def _given(client: GitHubClient | None, repo: str, number: int, sha: str) -> PullRequest | NoPullRequest:
    """A number given on another event (push, workflow_dispatch): open, at the run's commit where it is known,
    and the only open pull request at its head; two (one branch into two bases, two branches at one commit)
    are refused, as for a workflow_run."""
    if client is None:
        return NoPullRequest(f"cannot verify pull request #{number} (no token)")
    pr = client.get(f"/repos/{repo}/pulls/{number}") or {}
    head: dict[str, Any] = pr["head"] if isinstance(pr, dict) and isinstance(pr.get("head"), dict) else {}
    sha = sha or str(head.get("sha") or "")
    head_repo = (head.get("repo") or {}).get("full_name") if isinstance(head.get("repo"), dict) else None
    problem = _given_problem(client, repo, number, sha, head_repo)
    if problem:
        return NoPullRequest(problem.replace("the workflow_run's", "the run's"))
    run = {"head_repository": {"owner": {"login": str(head.get("label") or "").partition(":")[0]}},
           "head_branch": head.get("ref")}
    found = _by_head(client, repo, run, sha, head_repo)
    found.setdefault(number, "given (--pr / PARITY_GATE_PR)")
    if len(found) > 1:
        numbers = ", ".join(f"#{n}" for n in sorted(found))
        return NoPullRequest(f"open pull requests {numbers} all have head {sha[:12]}: which one this run is "
                             "about cannot be told")
    return PullRequest(number, repo, "given (--pr / PARITY_GATE_PR), the one open pull request at its head")


def _head_matches(pr: Any, sha: str, head_repo: str | None) -> bool:
    """An open pull request whose head is the run's commit, in the repository the run's head came from."""
    if not isinstance(pr, dict) or not isinstance(pr.get("number"), int) or pr.get("state", "open") != "open":
        return False
    head = pr.get("head") if isinstance(pr.get("head"), dict) else {}
    theirs = (head.get("repo") or {}).get("full_name") if isinstance(head.get("repo"), dict) else None
    return head.get("sha") == sha and not (head_repo and theirs and theirs != head_repo)


def _from_workflow_run(run: dict[str, Any], repo: str, client: GitHubClient | None,
                       explicit: int | None) -> PullRequest | NoPullRequest:
    """The pull request a ``workflow_run`` is about: the one open pull request whose head is the run's
    commit, from the run's head repository. The event lists those of this repository; for a fork (and
    for a run a review started) it lists none, so the API is asked by commit and by head branch. A number
    given (an artifact the pull request's code could forge) must be such a pull request, and the only one:
    two candidates (one branch into two bases, two branches at one commit) are refused, as either could
    be the wrong one."""
    sha = run.get("head_sha")
    if not sha:
        return NoPullRequest("the workflow_run event has no head_sha")
    head_repo = (run.get("head_repository") or {}).get("full_name")
    found = {pr["number"]: "workflow_run event pull_requests" for pr in run.get("pull_requests") or []
             if isinstance(pr, dict) and isinstance(pr.get("number"), int)
             and (pr.get("head") or {}).get("sha", sha) == sha}
    if explicit:
        if client is None:
            return NoPullRequest(f"cannot verify pull request #{explicit} against the workflow_run head (no token)")
        problem = _given_problem(client, repo, explicit, sha, head_repo)
        if problem:
            return NoPullRequest(problem)
    if not found:
        if client is None:
            return NoPullRequest("the workflow_run event lists no pull request and there is no token to look one up")
        found = _by_head(client, repo, run, sha, head_repo)
    if explicit:
        found.setdefault(explicit, "given (--pr), verified against the workflow_run head")
    if len(found) > 1:
        numbers = ", ".join(f"#{n}" for n in sorted(found))
        return NoPullRequest(f"open pull requests {numbers} all have head {sha[:12]}: which one this run is about "
                             "cannot be told")
    if found:
        [(number, how)] = found.items()
        return PullRequest(number, repo, how)
    return NoPullRequest(f"no open pull request has head {sha[:12]}")


def _by_head(client: GitHubClient, repo: str, run: dict[str, Any], sha: str, head_repo: str | None) -> dict[int, str]:
    """Open pull requests whose head is ``sha`` in ``head_repo``, by commit and by the run's head branch."""
    by_commit = client.get(f"/repos/{repo}/commits/{sha}/pulls") or []
    found = {pr["number"]: f"pull request of commit {sha[:12]}" for pr in by_commit if _head_matches(pr, sha, head_repo)}
    owner = ((run.get("head_repository") or {}).get("owner") or {}).get("login")
    branch = run.get("head_branch")
    if owner and branch:
        for pr in client.paginate(f"/repos/{repo}/pulls", state="open", head=f"{owner}:{branch}"):
            if _head_matches(pr, sha, head_repo):
                found.setdefault(pr["number"], f"open pull request from {owner}:{branch}")
    return found


def _given_problem(client: GitHubClient, repo: str, number: int, sha: str, head_repo: str | None) -> str:
    """Why pull request ``number`` is not one whose head is the run's commit, or "" when it is."""
    pr = client.get(f"/repos/{repo}/pulls/{number}") or {}
    head = pr.get("head") or {}
    if head.get("sha") != sha:
        return (f"pull request #{number} has head {str(head.get('sha'))[:12]}, not the workflow_run's {sha[:12]}: "
                "not commenting there")
    if not _head_matches({**pr, "number": number}, sha, head_repo):
        return (f"pull request #{number} is not open from {head_repo}, where the workflow_run's head came from: "
                "not commenting there")
    return ""

"""A local stand-in for the GitHub REST endpoints parity-gate uses, on 127.0.0.1.

It keeps issue comments per (repo, issue) with their author, paginates like GitHub (per_page, Link
header with next/last), answers the pull-request lookups used for workflow_run, the pull request
(labels; ``changed_files`` counted from its files unless a test sets it, or withholds it), its
reviews, its changed files (at most 3,000, as GitHub lists), its issue events
(``labeled`` with actor and time), a branch's updates (the repository activity API, newest first),
a user's permission on a repository (the collaborators endpoint: maintain reads as write, triage as
read), a commit (its author and committer as GitHub maps them), a file at a commit (the contents API),
commit statuses (kept per commit, oldest first), who the token is (``GET /user`` refused for an
installation token as for GITHUB_TOKEN; GraphQL's ``viewer``), records every request, and injects
faults: a status code for the next N matching requests (403/404/422/500), or a rate limit (403 +
X-RateLimit-Remaining: 0 + X-RateLimit-Reset, or 429 + Retry-After).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Fault:
    method: str
    path_pattern: str
    status: int
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    message: str = ""


class FakeGitHub:
    """``viewer``: None for an installation token like GITHUB_TOKEN (``GET /user`` is refused, GraphQL's
    viewer is the bot), or the login of a personal token's user (who then writes the comments)."""

    def __init__(self, token: str = "test-token", bot: str = "github-actions[bot]", viewer: str | None = None):
        self.token = token
        self.bot = viewer or bot
        self.viewer = viewer
        self.reviews: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.comments: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.on_post: list[Any] = []  # callables run before a comment is created (to stage races)
        self.pulls: dict[str, list[dict[str, Any]]] = {}  # repo -> PR objects (number, state, head{sha,ref,label})
        self.files: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (repo, PR) -> changed files
        self.events: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (repo, issue) -> issue events, oldest first
        self.activity: dict[str, list[dict[str, Any]]] = {}  # repo -> branch updates, oldest first
        self.roles: dict[tuple[str, str], str] = {}  # (repo, login) -> admin|maintain|write|triage|read
        self.withheld: set[str] = set()  # keys left out of every pull request served (a GitHub that omits them)
        self.commits: dict[tuple[str, str], dict[str, Any]] = {}  # (repo, sha) -> commit (author, committer)
        self.contents: dict[tuple[str, str, str], str] = {}  # (repo, commit, path) -> the file's text
        self.statuses: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (repo, commit) -> statuses, oldest first
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                fake._handle(self, "GET")

            def do_POST(self):
                fake._handle(self, "POST")

            def do_PATCH(self):
                fake._handle(self, "PATCH")

            def do_DELETE(self):
                fake._handle(self, "DELETE")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- test helpers ------------------------------------------------------------------------
    def add_comment(self, repo: str, number: int, body: str, user: str = "someone") -> dict[str, Any]:
        with self._lock:
            return self._new_comment(repo, number, body, user)

    def issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        return list(self.comments.get((repo, number), []))

    def inject(self, method: str, path_pattern: str, status: int, times: int = 1, headers=None, message="") -> None:
        self.faults.append(Fault(method, path_pattern, status, times, dict(headers or {}), message))

    def rate_limit(self, method: str, path_pattern: str, *, retry_after: str | None = None, times: int = 1) -> None:
        if retry_after is not None:
            self.inject(method, path_pattern, 429, times, {"Retry-After": retry_after}, "secondary rate limit")
        else:
            reset = str(int(time.time()))  # already due: the client retries at once
            self.inject(method, path_pattern, 403, times,
                        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}, "API rate limit exceeded")

    def open_pull(self, repo: str, pull: dict[str, Any], files: tuple[str, ...] = (), number: int | None = None) -> dict:
        """A pull request (an event payload's ``pull_request``, copied) whose changes are ``files``."""
        pr = {**json.loads(json.dumps(pull)), "state": "open", "changed_files": len(files)}
        pr["number"] = number or pr["number"]
        pr.setdefault("labels", [])
        self.pulls.setdefault(repo, []).append(pr)
        self.files[(repo, pr["number"])] = [{"filename": f, "status": "modified"} for f in files]
        return pr

    def push(self, repo: str, branch: str, sha: str, at: str, before: str = "0" * 40, actor: str = "someone") -> None:
        """A branch update as the activity API lists it (``at``: GitHub's time, ISO 8601)."""
        self.activity.setdefault(repo, []).append({
            "id": len(self.activity.get(repo, [])) + 1, "before": before, "after": sha, "ref": f"refs/heads/{branch}",
            "timestamp": at, "activity_type": "push", "actor": {"login": actor}})
        for base, prs in self.pulls.items():  # the pull requests from that branch move with it
            for pr in prs:
                head = pr["head"]
                if head.get("ref") == branch and ((head.get("repo") or {}).get("full_name") or base) == repo:
                    head["sha"] = sha

    def label(self, repo: str, number: int, name: str, actor: str, at: str) -> None:
        """``actor`` adds label ``name`` to the pull request at ``at``: its issue event, and the label."""
        items = self.events.setdefault((repo, number), [])
        items.append({"id": 5000 + len(items), "event": "labeled", "actor": {"login": actor}, "created_at": at,
                      "label": {"name": name, "color": "ededed"}})
        for pr in self.pulls.get(repo, []):
            if pr["number"] == number and all(lab.get("name") != name for lab in pr.setdefault("labels", [])):
                pr["labels"].append({"name": name})

    def calls(self, method: str | None = None, contains: str = "") -> list[Recorded]:
        return [r for r in self.requests if (method is None or r.method == method) and contains in r.path]

    # -- the server side ---------------------------------------------------------------------
    def _new_comment(self, repo: str, number: int, body: str, user: str) -> dict[str, Any]:
        self._next_id += 1
        c = {
            "id": self._next_id,
            "body": body,
            "user": {"login": user, "type": "Bot" if user.endswith("[bot]") else "User"},
            "html_url": f"https://github.example/{repo}/pull/{number}#issuecomment-{self._next_id}",
        }
        self.comments.setdefault((repo, number), []).append(c)
        return c

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with self._lock:
            self.requests.append(Recorded(method, parts.path, parse_qs(parts.query), dict(h.headers.items()), body))
            status, headers, payload = self._route(h, method, parts.path, parse_qs(parts.query), body)
        data = b"" if payload is None else json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _route(self, h, method: str, path: str, query: dict[str, list[str]], body: Any):
        for f in self.faults:
            if f.times > 0 and f.method == method and re.search(f.path_pattern, path):
                f.times -= 1
                return f.status, f.headers, {"message": f.message or f"injected {f.status}",
                                             "documentation_url": "https://docs.github.com/rest"}
        if h.headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {}, {"message": "Bad credentials"}
        if path == "/user" and method == "GET":
            if self.viewer is None:
                return 403, {}, {"message": "Resource not accessible by integration"}
            return 200, {}, {"login": self.viewer, "type": "User"}
        if path == "/graphql" and method == "POST":
            login, kind = (self.viewer, "User") if self.viewer else (self.bot.removesuffix("[bot]"), "Bot")
            return 200, {}, {"data": {"viewer": {"login": login, "__typename": kind}}}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)
        if m and method == "GET":
            return self._page(path, query, self.comments.get((m[1], int(m[2])), []))
        if m and method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return 422, {}, {"message": "Validation Failed", "errors": [{"code": "missing_field", "field": "body"}]}
            if len(body["body"]) > 65536:
                return 422, {}, {"message": "Validation Failed", "errors": [{"message": "Body is too long (maximum is 65536 characters)"}]}
            while self.on_post:
                self.on_post.pop(0)(m[1], int(m[2]))
            return 201, {}, self._new_comment(m[1], int(m[2]), body["body"], self.bot)
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path)
        if m and method == "DELETE":
            for (repo, _), items in self.comments.items():
                for c in items:
                    if repo == m[1] and c["id"] == int(m[2]):
                        items.remove(c)
                        return 204, {}, None
            return 404, {}, {"message": "Not Found"}
        if m and method == "PATCH":
            for (repo, _), items in self.comments.items():
                for c in items:
                    if repo == m[1] and c["id"] == int(m[2]):
                        if len(body.get("body", "")) > 65536:
                            return 422, {}, {"message": "Validation Failed", "errors": [{"message": "Body is too long"}]}
                        c["body"] = body["body"]
                        return 200, {}, c
            return 404, {}, {"message": "Not Found"}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/commits/([0-9a-f]+)/pulls", path)
        if m and method == "GET":
            return 200, {}, [p for p in self.pulls.get(m[1], []) if p["head"]["sha"] == m[2] and not p.get("fork")]
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/statuses/([0-9a-f]{40})", path)
        if m and method == "POST":
            if not isinstance(body, dict) or body.get("state") not in ("error", "failure", "pending", "success") \
                    or len(str(body.get("description") or "")) > 140:
                return 422, {}, {"message": "Validation Failed"}
            self.statuses.setdefault((m[1], m[2]), []).append(body)
            return 201, {}, {"id": len(self.statuses[(m[1], m[2])]), **body}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/contents/(.+)", path)
        if m and method == "GET":
            text = self.contents.get((m[1], query.get("ref", [""])[0], unquote(m[2])))
            if text is None:
                return 404, {}, {"message": "Not Found"}
            return 200, {}, {"type": "file", "path": unquote(m[2]), "encoding": "base64",
                             "content": base64.encodebytes(text.encode()).decode()}  # wrapped at 60, as GitHub does
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/commits/([0-9a-f]+)", path)
        if m and method == "GET":
            found = self.commits.get((m[1], m[2]))
            return (200, {}, {"sha": m[2], **found}) if found else (404, {}, {"message": "No commit found for SHA"})
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/files", path)
        if m and method == "GET":
            return self._page(path, query, self.files.get((m[1], int(m[2])), [])[:3000])
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/events", path)
        if m and method == "GET":
            return self._page(path, query, self.events.get((m[1], int(m[2])), []))
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/activity", path)
        if m and method == "GET":
            ref = query.get("ref", [""])[0]
            ref = ref if ref.startswith("refs/") or not ref else f"refs/heads/{ref}"
            items = [a for a in self.activity.get(m[1], []) if not ref or a["ref"] == ref]
            return self._page(path, query, items[::-1] if query.get("direction", ["desc"])[0] == "desc" else items)
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission", path)
        if m and method == "GET":
            role = self.roles.get((m[1], m[2]), "none")
            legacy = {"maintain": "write", "triage": "read"}.get(role, role)  # as GitHub maps them
            return 200, {}, {"permission": legacy, "role_name": role, "user": {"login": m[2]}}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews", path)
        if m and method == "GET":
            return self._page(path, query, self.reviews.get((m[1], int(m[2])), []))
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", path)
        if m and method == "GET":
            for p in self.pulls.get(m[1], []):
                if p["number"] == int(m[2]):
                    # GitHub always counts the changed files; a test's hand-made pull request may not.
                    served = {"changed_files": len(self.files.get((m[1], p["number"]), [])), **p}
                    return 200, {}, {k: v for k, v in served.items() if k not in self.withheld}
            return 404, {}, {"message": "Not Found"}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls", path)
        if m and method == "GET":
            head = query.get("head", [""])[0]
            state = query.get("state", ["open"])[0]
            items = [p for p in self.pulls.get(m[1], []) if (not head or p["head"]["label"] == head) and p["state"] == state]
            return self._page(path, query, items)
        return 404, {}, {"message": "Not Found"}

    def _page(self, path: str, query: dict[str, list[str]], items: list[Any]):
        per_page = min(100, int(query.get("per_page", ["30"])[0]))
        page = int(query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        keep = {k: v[0] for k, v in query.items() if k not in ("page",)}

        def url(p: int) -> str:
            q = urlencode({**keep, "page": p})
            return f"<{self.url}{path}?{q}>"

        links = []
        if page < last:
            links += [f'{url(page + 1)}; rel="next"', f'{url(last)}; rel="last"']
        if page > 1:
            links += [f'{url(1)}; rel="first"', f'{url(page - 1)}; rel="prev"']
        return 200, ({"Link": ", ".join(links)} if links else {}), chunk

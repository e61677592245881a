"""A minimal GitHub REST client on urllib: JSON in and out, Link pagination, bounded rate-limit waits.

The token is sent only to the configured API host (GITHUB_API_URL, so GHE and the tests'
local server work) and never appears in repr, errors or logs.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gate import __version__

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_MAX_WAIT = 120.0  # seconds spent waiting on rate limits before giving up
SERVER_ERROR_RETRIES = 2


class GitHubError(Exception):
    """An API call failed; ``status`` is the HTTP status (0: no response at all)."""

    def __init__(self, method: str, path: str, status: int, message: str):
        self.method, self.path, self.status, self.message = method, path, status, message
        super().__init__(f"GitHub API {method} {path}: {status or 'no response'} {message}".rstrip())


class RateLimited(GitHubError):
    """Rate limited for longer than the configured maximum wait."""


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    data: Any


class GitHubClient:
    def __init__(self, token: str | None, api_url: str = DEFAULT_API_URL, *,
                 max_wait: float = DEFAULT_MAX_WAIT, timeout: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep):
        self._token = token or None
        self.api_url = api_url.rstrip("/")
        self.max_wait = max_wait
        self.timeout = timeout
        self.waited = 0.0
        self._sleep = sleep
        self._host = urllib.parse.urlsplit(self.api_url).netloc

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token={'***' if self._token else None})"

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Response:
        url = path if path.startswith(("http://", "https://")) else self.api_url + path
        if params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params)
        shown = urllib.parse.urlsplit(url).path  # for messages: no query, no host
        server_errors = 0
        while True:
            status, headers, raw = self._send(method, url, shown, body)
            if status < 400:
                try:
                    return Response(status, headers, json.loads(raw) if raw.strip() else None)  # 204: no body
                except (ValueError, UnicodeDecodeError):
                    raise GitHubError(method, shown, status, "the answer is not JSON (a proxy?)") from None
            message = _message(raw)
            wait = _rate_limit_wait(status, headers)
            if wait is None and status >= 500 and server_errors < SERVER_ERROR_RETRIES:
                server_errors += 1
                wait = float(server_errors)
            if wait is None:
                raise GitHubError(method, shown, status, message)
            if self.waited + wait > self.max_wait:
                raise RateLimited(method, shown, status, f"{message} (would wait {wait:.0f}s more; already waited "
                                  f"{self.waited:.0f}s, max {self.max_wait:.0f}s)")
            self._sleep(wait)
            self.waited += wait

    def _send(self, method: str, url: str, shown: str, body: Any) -> tuple[int, dict[str, str], bytes]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"parity-gate/{__version__}"})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self._token and urllib.parse.urlsplit(url).netloc == self._host:
            req.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in (e.headers or {}).items()}, e.read() or b""
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise GitHubError(method, shown, 0, f"({reason})") from None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).data

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body=body).data

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body=body).data

    def paginate(self, path: str, **params: Any) -> Iterator[Any]:
        """Items of a list endpoint, page by page (per_page=100), following Link rel="next"."""
        resp = self.request("GET", path, params={"per_page": 100, **params})
        while True:
            yield from resp.data or []
            nxt = _next_link(resp.headers.get("link", ""))
            if not nxt:
                return
            if urllib.parse.urlsplit(nxt).netloc != self._host:
                raise GitHubError("GET", path, 0, f"pagination link leaves the API host ({urllib.parse.urlsplit(nxt).netloc})")
            resp = self.request("GET", nxt)


def _message(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw[:200].decode("utf-8", "replace").strip()
    if isinstance(data, dict):
        msg = str(data.get("message", ""))
        errors = data.get("errors")
        if isinstance(errors, list) and errors:
            details = "; ".join(str(e.get("message") or e.get("code") or e) if isinstance(e, dict) else str(e) for e in errors[:3])
            msg = f"{msg} ({details})"
        return msg[:300]
    return str(data)[:200]


def _rate_limit_wait(status: int, headers: dict[str, str]) -> float | None:
    """Seconds to wait before retrying, or None when the error is not a rate limit."""
    if status not in (403, 429):
        return None
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            return 60.0
    if headers.get("x-ratelimit-remaining") == "0":
        try:
            left = float(headers.get("x-ratelimit-reset", "")) - time.time()
            return left + 1.0 if left > 0 else 0.0  # +1 s: the reset time is whole seconds
        except ValueError:
            return 60.0
    return 60.0 if status == 429 else None


_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="([^"]+)"')


def _next_link(header: str) -> str | None:
    for url, rel in _LINK.findall(header):
        if "next" in rel.split():
            return url
    return None

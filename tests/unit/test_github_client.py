"""gate.github.client against the local fake GitHub (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import pytest

from gate.github.client import GitHubClient, GitHubError, RateLimited
from tests.support.fake_github import FakeGitHub

TOKEN = "ghs_unitTestToken"


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as f:
        yield f


def client(fake, **kw) -> GitHubClient:
    return GitHubClient(TOKEN, fake.url, **kw)


def test_repr_never_shows_the_token(fake):
    c = client(fake)
    assert TOKEN not in repr(c) and "***" in repr(c)
    assert TOKEN not in str(vars(c).get("token", ""))


def test_paginate_follows_link_headers_100_per_page(fake):
    for i in range(250):
        fake.add_comment("o/r", 1, f"c{i}")
    bodies = [c["body"] for c in client(fake).paginate("/repos/o/r/issues/1/comments")]
    assert bodies == [f"c{i}" for i in range(250)]
    assert [r.query.get("page", ["1"])[0] for r in fake.requests] == ["1", "2", "3"]


def test_error_names_the_call_and_github_message_without_the_token(fake):
    fake.inject("GET", "/issues/1/comments", 403, message="Resource not accessible by integration")
    with pytest.raises(GitHubError) as e:
        client(fake).get("/repos/o/r/issues/1/comments")
    assert str(e.value) == "GitHub API GET /repos/o/r/issues/1/comments: 403 Resource not accessible by integration"
    assert e.value.status == 403 and TOKEN not in str(e.value)


def test_retry_after_is_honoured_and_counted(fake):
    slept = []
    fake.rate_limit("GET", "/issues/1/comments", retry_after="2", times=2)
    c = client(fake, sleep=slept.append)
    assert c.get("/repos/o/r/issues/1/comments") == []
    assert slept == [2.0, 2.0] and c.waited == 4.0


def test_waiting_past_max_wait_raises_rate_limited(fake):
    fake.rate_limit("GET", "/issues/1/comments", retry_after="5", times=3)
    c = client(fake, max_wait=9, sleep=lambda s: None)
    with pytest.raises(RateLimited, match=r"would wait 5s more; already waited 5s, max 9s"):
        c.get("/repos/o/r/issues/1/comments")


def test_primary_rate_limit_waits_for_the_reset(fake):
    import time

    slept = []
    reset = int(time.time()) + 30
    fake.inject("GET", "/issues/1/comments", 403,
                headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})
    before = time.time()
    client(fake, sleep=slept.append).get("/repos/o/r/issues/1/comments")
    after = time.time()
    # Until the reset, plus a second for its whole-second rounding, as of when the client read the
    # response: bounded by the clock around the call, however long a loaded runner takes over it.
    assert reset - after + 1.0 <= slept[0] <= reset - before + 1.0


def test_plain_403_is_not_retried(fake):
    fake.inject("POST", "/issues/1/comments", 403, message="nope")
    with pytest.raises(GitHubError):
        client(fake, sleep=lambda s: pytest.fail("slept")).post("/repos/o/r/issues/1/comments", {"body": "x"})


def test_server_errors_are_retried_twice(fake):
    fake.inject("GET", "/issues/1/comments", 502, times=2)
    assert client(fake, sleep=lambda s: None).get("/repos/o/r/issues/1/comments") == []
    fake.inject("GET", "/issues/1/comments", 502, times=3)
    with pytest.raises(GitHubError, match="502"):
        client(fake, sleep=lambda s: None).get("/repos/o/r/issues/1/comments")


def test_token_only_goes_to_the_api_host(fake):
    c = client(fake)
    c.get("/repos/o/r/issues/1/comments")
    assert fake.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    with FakeGitHub(token=TOKEN) as other, pytest.raises(GitHubError, match="401 Bad credentials"):
        c.get(other.url + "/repos/o/r/issues/1/comments")  # another host (port): sent without the token
    assert "Authorization" not in other.requests[0].headers


def test_validation_errors_carry_the_details(fake):
    with pytest.raises(GitHubError, match=r"422 Validation Failed \(Body is too long"):
        client(fake).post("/repos/o/r/issues/1/comments", {"body": "x" * 65_537})

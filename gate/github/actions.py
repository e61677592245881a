"""The GitHub Actions runtime: the GITHUB_* environment, step outputs, job summary, workflow commands."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

MAX_ANNOTATIONS = 10


@dataclass(frozen=True)
class ActionsEnv:
    """What a step sees of its run. Built from ``os.environ`` (or any mapping, for tests)."""

    api_url: str = "https://api.github.com"
    graphql_url: str = ""
    server_url: str = "https://github.com"
    repository: str = ""
    run_id: str = ""
    run_attempt: str = ""
    event_name: str = ""
    event_path: str = ""
    sha: str = ""
    output_path: str = ""
    summary_path: str = ""
    in_actions: bool = False
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ActionsEnv:
        e = os.environ if environ is None else environ
        return cls(
            api_url=e.get("GITHUB_API_URL") or "https://api.github.com",
            graphql_url=e.get("GITHUB_GRAPHQL_URL") or "",
            server_url=e.get("GITHUB_SERVER_URL") or "https://github.com",
            repository=e.get("GITHUB_REPOSITORY", ""),
            run_id=e.get("GITHUB_RUN_ID", ""),
            run_attempt=e.get("GITHUB_RUN_ATTEMPT", ""),
            event_name=e.get("GITHUB_EVENT_NAME", ""),
            event_path=e.get("GITHUB_EVENT_PATH", ""),
            sha=e.get("GITHUB_SHA", ""),
            output_path=e.get("GITHUB_OUTPUT", ""),
            summary_path=e.get("GITHUB_STEP_SUMMARY", ""),
            in_actions=e.get("GITHUB_ACTIONS") == "true",
            token=e.get("PARITY_GATE_GITHUB_TOKEN") or e.get("GITHUB_TOKEN") or None,
        )

    @property
    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"


def write_outputs(path: str, outputs: Mapping[str, str]) -> None:
    """Append step outputs in the multi-line-safe ``name<<DELIM`` form."""
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, value in outputs.items():
            delim = f"ghadelim_{secrets.token_hex(8)}"
            f.write(f"{name}<<{delim}\n{value}\n{delim}\n")


def append_summary(path: str, markdown: str) -> bool:
    if not path:
        return False
    with open(path, "a", encoding="utf-8") as f:
        f.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str) -> str:
    """A workflow command line (``::error title=...::message``), escaped."""
    props = ",".join(f"{k}={_escape_property(v)}" for k, v in properties.items() if v)
    return f"::{name}{' ' + props if props else ''}::{_escape_data(message)}"


def write_file(path: str, text: str) -> str:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return str(p.resolve())

"""The GitHub Actions runtime: the GITHUB_* environment, step outputs, job summary, workflow commands."""

from __future__ import annotations

import io
import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_ANNOTATIONS = 10
_VARIABLES = {"repository": "GITHUB_REPOSITORY", "run_id": "GITHUB_RUN_ID",  # ActionsEnv's plain fields
              "run_attempt": "GITHUB_RUN_ATTEMPT", "event_name": "GITHUB_EVENT_NAME",
              "event_path": "GITHUB_EVENT_PATH", "sha": "GITHUB_SHA", "output_path": "GITHUB_OUTPUT",
              "summary_path": "GITHUB_STEP_SUMMARY"}


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
            **{name: e.get(var, "") for name, var in _VARIABLES.items()},
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


def _shown(text: str) -> str:
    """Unprintable characters shown escaped (``\\x1c``, ``\\u2028``)."""
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in text)


def inert(line: str) -> str:
    """One log line the runner cannot read as a workflow command: it trims every leading whitespace
    character (.NET's ``TrimStart``: U+00A0, U+2003, U+3000, ...; ``str.isspace`` accepts them all and
    more) and then looks for ``::``, and it reads a legacy command at ``##[`` anywhere in the line. So
    ``##[`` is broken, and a leading ``::`` after any whitespace, by a backslash."""
    line = line.replace("##[", "#\\#[")
    body = line.lstrip()
    return line[: len(line) - len(body)] + ":\\:" + body[2:] if body.startswith("::") else line


def log_safe(text: object) -> str:
    """``text`` (from a report or the API) made one inert log line: every line break and other unprintable
    character (all that ``str.splitlines()`` splits at, bidi and zero-width characters) shown escaped."""
    return inert(_shown(str(text)))


class InertLines(io.TextIOBase):
    """The one writer of what parity-gate prints in Actions (``inert_streams`` puts it on stdout and
    stderr): a text stream no line of which can start a workflow command, in whatever pieces it is written
    (rich writes a line in several). Each line goes on whole through ``inert``, with the line breaks the
    runner does not cut at shown escaped. Colour codes pass (a terminal's consoles)."""

    _BREAKS = dict.fromkeys(map(ord, "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.stream, self.pending = stream, ""

    @property
    def encoding(self) -> str:  # type: ignore[override]  # what click asks before it writes text here
        return getattr(self.stream, "encoding", "utf-8")

    @property
    def errors(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "errors", "strict")

    @property
    def buffer(self) -> Any:  # a worker's binary progress lines to its parent, never read by the runner
        return self.stream.buffer

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.pending += s
        cut = max(self.pending.rfind("\n"), self.pending.rfind("\r")) + 1
        if cut:
            done, self.pending = self.pending[:cut], self.pending[cut:]
            self.stream.write("".join(self._line(line) for line in done.splitlines(keepends=True)))
        return len(s)

    def flush(self) -> None:
        start = self.pending.lstrip()
        if start not in ("", ":") and not self.pending.endswith("#"):  # held: what more text could make a command
            self.stream.write(self._line(self.pending))
            self.pending = ""
        self.stream.flush()

    def close(self) -> None:
        if self.pending:
            self.stream.write(self._line(self.pending))
            self.pending = ""
        self.stream.flush()

    def _line(self, line: str) -> str:
        body = line.rstrip("\r\n")
        shown = "".join(ascii(ch)[1:-1] if ord(ch) in self._BREAKS else ch for ch in body)
        return inert(shown) + line[len(body):]

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


def inert_streams() -> None:
    """In Actions, every line this process prints (rich, click, print, warnings) goes through
    ``InertLines``."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    if not isinstance(sys.stdout, InertLines):
        sys.stdout = InertLines(sys.stdout)
    if not isinstance(sys.stderr, InertLines):
        sys.stderr = InertLines(sys.stderr)


def _escape_data(s: str) -> str:
    # %, CR and LF are what the runner unescapes; the rest that could break or hide a line is shown escaped.
    return _shown(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")).replace("##[", "#\\#[")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str) -> str:
    """A workflow command line (``::error title=...::message``), escaped."""
    props = ",".join(f"{k}={_escape_property(v)}" for k, v in properties.items() if v)
    return f"::{name}{' ' + props if props else ''}::{_escape_data(message)}"


def write_command(line: str) -> None:
    """Print a workflow command that ``command`` made (its text escaped there) past the writer that
    would break it: the one way parity-gate's own annotations reach the log."""
    if not line.startswith("::") or "\n" in line or "\r" in line:
        raise ValueError(f"not one workflow command: {line[:40]!r}")
    out = sys.stdout.stream if isinstance(sys.stdout, InertLines) else sys.stdout
    sys.stdout.flush()
    out.write(line + "\n")
    out.flush()


def write_file(path: str, text: str) -> str:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return str(p.resolve())

"""The report files the CLI writes, one line each in ``RENDERERS``: ``--<name> PATH`` writes
``render(report)`` there, atomically. ``check``, ``report`` and ``merge`` take their options from this
list (``gate.cli.shared.report_options``), so a new format is its module and its line here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gate.render.junit import render_junit
from gate.render.markdown import render_markdown
from gate.verdict.report_file import report_json
from gate.verdict.types import Report


@dataclass(frozen=True)
class Renderer:
    name: str  # the option --<name> and its parameter
    render: Callable[[Report], str]
    help: str
    envvar: str | None = None


RENDERERS = (
    Renderer("json", report_json, "Write the JSON report here."),
    Renderer("markdown", render_markdown, "Write the Markdown report here."),
    Renderer("junit", render_junit,
             "Write the verdict as JUnit XML here (one test case per model and provider), "
             "for CI systems that show test reports.", envvar="PARITY_GATE_JUNIT"),
)

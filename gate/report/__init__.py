"""Reports for people: Markdown for the PR comment and the job summary, from the JSON report."""

from __future__ import annotations

from gate.report.load import load_report, validate_report
from gate.report.markdown import COMMENT_LIMIT, SUMMARY_LIMIT, Links, headline_text, render_markdown

__all__ = [
    "COMMENT_LIMIT",
    "SUMMARY_LIMIT",
    "Links",
    "headline_text",
    "load_report",
    "render_markdown",
    "validate_report",
]

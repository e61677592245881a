"""Reports for people: Markdown for the PR comment and the job summary (the console is the
CLI's, in ``gate.cli.console``). The report files the CLI writes are listed in ``renderers``."""

from __future__ import annotations

from gate.render.markdown import COMMENT_LIMIT, SUMMARY_LIMIT, Links, headline_text, render_markdown

__all__ = ["COMMENT_LIMIT", "SUMMARY_LIMIT", "Links", "headline_text", "render_markdown"]

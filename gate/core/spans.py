"""A name written as a Markdown code span (CommonMark): the one rule for messages and the comment alike,
so a name holding backticks reads whole and the prose after it stays prose."""

from __future__ import annotations

import re


def span(name: object) -> str:
    """``name`` between a fence of backticks longer than any run inside it; padded with a space when it
    starts or ends with a backtick (or is itself padded), which the reader strips again."""
    s = str(name)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s[:1] == "`" or s[-1:] == "`" or (s[:1] == s[-1:] == " " and s.strip()) else ""
    return f"{fence}{pad}{s}{pad}{fence}"

"""Safe Markdown/HTML text: every string from a report, artifact, exception or model name goes through
``plain`` (prose), ``attr`` (raw HTML) or ``code`` (a code span). They cap length, flatten newlines,
drop what cannot be seen (``visible``) and keep pipes and HTML inert; prose also passes ``inert``, which
stops GitHub acting on @mentions, autolinks and issue references. GitHub acts on none of these in a code
span, so ``code`` leaves its text as written (copyable).
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Callable

from gate.core.spans import span
from gate.core.status import AUDITS, Check

NAME_CAP = 160
MESSAGE_CAP = 400

ZWSP = "\u200b"  # zero-width space: invisible, and breaks the patterns GitHub looks for
_ACTIVE = re.compile(
    r"(?<=@)"  # @user, @org/team, and the @ of an e-mail address
    r"|(?<=#)(?=\d)|(?<=\bGH-)(?=\d)"  # #123, owner/repo#123, GH-123
    r"|(?<=:)(?=//)|(?<=\bwww)(?=\.)"  # scheme://..., www.host
    r"|(?<=\bmailto)(?=:)|(?<=\bxmpp)(?=:)",  # mailto:, xmpp:
    re.IGNORECASE,
)


def inert(text: str) -> str:
    """``text`` with a zero-width space where GitHub would mention, link or reference: it reads the
    same, and notifies no one and links nowhere."""
    return _ACTIVE.sub(ZWSP, text)


# Shown as nothing, or changing how the text around them shows: format characters (category Cf: bidi
# overrides and isolates, zero-width spaces and joiners, tags), controls, surrogates, unassigned code
# points, and the blank fillers and selectors of other categories.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Cn", "Zl", "Zp"})
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0") | frozenset(map(chr, range(0xFE00, 0xFE10))) \
    | frozenset(map(chr, range(0xE0100, 0xE01F0)))


def visible(text: str) -> str:
    """``text`` without the characters a reader cannot see, which could make a line read as another."""
    return "".join(ch for ch in text if ch not in _INVISIBLE and unicodedata.category(ch) not in _INVISIBLE_CATEGORIES)


def _flat(text: object) -> str:
    return visible(" ".join(str(text).split()))  # whitespace first: a line break becomes a space, not nothing


def clip(text: object, cap: int) -> str:
    s = _flat(text)
    return s if len(s) <= cap else s[: cap - 1] + "…"


def shorten(name: object, cap: int = NAME_CAP) -> str:
    """A name cut in the middle: its start and its leaf stay, so two long names that differ at the end
    (``….q_proj``, ``….k_proj``) still read as two."""
    s, head = _flat(name), (cap - 1) // 2
    return s if len(s) <= cap else s[:head] + "…" + s[len(s) - (cap - 1 - head):]


def code(text: object, cap: int = NAME_CAP) -> str:
    """An inline code span (``span``) holding the name as written, however many backticks it holds; a table
    cell escapes its pipes (``row``)."""
    return span(shorten(text, cap))


def row(*cells: str) -> str:
    """One table row: GitHub splits cells at every ``|``, inside code spans too, unless escaped; it
    unescapes ``\\|`` before the cell is read, so text already escaped for prose reads the same."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


# A code span as CommonMark reads one: a run of backticks closed by the next run of the same length.
_QUOTED = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def plain(text: object, cap: int = MESSAGE_CAP) -> str:
    """Prose from a report: no HTML, no table breaks, no accidental emphasis, links or mentions. What
    the message quotes in backticks (a command, a name) is a code span, as its writer meant it: shown
    as code and copyable, never as escaped backticks."""
    s, out, last = clip(text, cap), [], 0
    if s.count("`") % 2 and s != clip(text, len(str(text)) + 1):  # clipped inside a code span: end before it
        s = s[:s.rindex("`")].rstrip() + "…"
    for quoted in _QUOTED.finditer(s):
        inner = quoted.group(2)
        inner = inner[1:-1] if inner[:1] == inner[-1:] == " " and inner.strip() else inner
        out += [_prose(s[last:quoted.start()]), code(inner, cap)]
        last = quoted.end()
    return "".join(out) + _prose(s[last:])


def _prose(s: str) -> str:
    return re.sub(r"([\\|*_\[\]`#])", r"\\\1", html.escape(inert(s), quote=False))


def attr(text: object, cap: int = NAME_CAP) -> str:
    """Text inside raw HTML (a <summary>), where GitHub still mentions and links."""
    return html.escape(inert(shorten(text, cap)), quote=True)


def num(value: object) -> str:
    """A measured value: 3 significant digits; None is a dash; NaN/Inf spelled out."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return plain(value, 40)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    return f"{value:.3g}" if 1e-3 <= abs(value) < 1e4 else f"{value:.2e}"


def over(check: object, value: float | None, threshold: float | None,
         fmt: Callable[[float | None], str] = num, aside: str = "") -> str:
    """What a failed check measured against its limit (``value > threshold``, ``aside`` after the value);
    an audit of a whole target (latency, placement, ...) has neither: "audit"; a check that measures
    nothing (a shape): "changed"; NaN/Inf counts, which must be equal: the count and the one expected."""
    if check in AUDITS:
        return "audit"
    if check == Check.NONFINITE:
        return f"{fmt(value)} NaN/Inf, expected {fmt(threshold)}"
    return "changed" if value is None and threshold is None else f"{fmt(value)}{aside} > {fmt(threshold)}"


def link(label: str, url: str | None) -> str:
    return f"[{label}]({url.replace(' ', '%20').replace(')', '%29')})" if url else label


def times(value: object, baseline: object) -> str:
    """``value`` as a multiple of ``baseline``, the way a reader compares errors: "≈ 1,500×", "≈ 9.5×"
    (two significant digits); empty when there is no positive finite baseline to compare with."""
    if (isinstance(value, bool) or isinstance(baseline, bool) or not isinstance(value, (int, float))
            or not isinstance(baseline, (int, float))):
        return ""
    if not (math.isfinite(value) and math.isfinite(baseline)) or baseline <= 0 or value <= 0:
        return ""
    ratio = value / baseline
    if ratio < 0.01:
        return ""
    if not math.isfinite(ratio) or ratio >= 1e15:
        return "≫ 10¹⁵×" if ratio > 1 else ""
    if ratio < 9.95:
        return f"≈ {ratio:.2g}×"
    digits = len(str(round(ratio))) - 2
    return f"≈ {round(round(ratio), -digits):,}×"


def count(n: int, word: str) -> str:
    """``1 model``, ``2 models``: a number and its noun, plural when it is not one."""
    return f"{n:,} {word}{'s' * (n != 1)}"

"""What GitHub would act on in a comment: the Markdown rendered to HTML (markdown-it-py, CommonMark
with tables and raw HTML, as GitHub allows it), then, as GitHub's filters do, the text outside
``<code>``, ``<pre>`` and ``<a>`` searched for @mentions (users and teams), autolinks (URLs,
``www.``, e-mail addresses, ``mailto:``/``xmpp:``) and issue references; and every HTML element
and link the document holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

# The patterns GitHub's mention, autolink and reference filters look for in text.
ACTIVE = re.compile(
    r"(?<![\w`])@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][\w.-]*)?"  # @user, @org/team
    r"|\b(?:https?|ftp)://\S|\bwww\.\S|\b(?:mailto|xmpp):\S"  # URLs
    r"|[\w.+-]+@[A-Za-z0-9-]+\.[A-Za-z]"  # e-mail addresses
    r"|(?<![\w&])#\d|\bGH-\d",  # #123, owner/repo#123, GH-123
    re.IGNORECASE,
)
INERT_TAGS = {"code", "pre", "a"}


@dataclass
class Acted:
    active: list[str] = field(default_factory=list)  # text GitHub would turn into a mention, link or reference
    tags: set[str] = field(default_factory=set)  # every element of the rendered document
    hrefs: list[str] = field(default_factory=list)  # every link's target
    images: list[str] = field(default_factory=list)


class _Walk(HTMLParser):
    def __init__(self, out: Acted):
        super().__init__(convert_charrefs=True)
        self.out, self.inert = out, 0

    def handle_starttag(self, tag, attrs):
        self.out.tags.add(tag)
        if tag == "a":
            self.out.hrefs.append(dict(attrs).get("href") or "")
        if tag == "img":
            self.out.images.append(dict(attrs).get("src") or "")
        self.inert += tag in INERT_TAGS

    def handle_endtag(self, tag):
        self.inert -= tag in INERT_TAGS and self.inert > 0

    def handle_data(self, data):
        if not self.inert:
            self.out.active += ACTIVE.findall(data)


def acted_on(markdown: str) -> Acted:
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    out = Acted()
    _Walk(out).feed(html)
    return out

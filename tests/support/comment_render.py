"""Render a PR comment as GitHub shows it, in headless Chromium: GitHub-flavoured Markdown (tables,
raw HTML such as <details> and <sub>, alerts) to HTML with markdown-it-py, and the ```mermaid blocks
drawn by Mermaid from npm (tests/render: `npm ci --prefix tests/render`), as GitHub draws them.

``render(markdown, workdir)`` returns what the page reported once Mermaid finished: how many charts
it drew and the first Mermaid error, if any; ``screenshot=PATH`` also writes a PNG of the page.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MERMAID = ROOT / "tests" / "render" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_ALERT = re.compile(r"<blockquote>\s*<p>\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*", re.S)
_MERMAID = re.compile(r'<pre><code class="language-mermaid">(.*?)</code></pre>', re.S)

CSS = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 880px; margin: 16px auto; padding: 16px 24px; border: 1px solid #d0d7de; border-radius: 6px; }
h3 { font-size: 1.25em; margin: 16px 0 8px; } h4 { margin: 16px 0 8px; }
table { border-collapse: collapse; display: block; overflow: auto; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; } th { background: #f6f8fa; }
code { background: rgba(175,184,193,.2); border-radius: 6px; padding: .1em .3em; font-size: 85%; }
blockquote { color: #59636e; border-left: .25em solid #d0d7de; margin: 0; padding: 0 1em; }
.markdown-alert { border-left: .25em solid #8250df; padding: 8px 16px; margin-bottom: 16px; }
.markdown-alert-title { color: #8250df; font-weight: 600; margin: 0; }
details { margin: 8px 0; } summary { cursor: pointer; } sub { color: #59636e; }
pre.mermaid { background: none; text-align: center; }
"""

SCRIPT = """
mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default" });
window.addEventListener("load", async () => {
  const out = document.getElementById("render-status");
  try {
    await mermaid.run({ querySelector: "pre.mermaid", suppressErrors: false });
    out.dataset.status = "ok";
  } catch (e) {
    out.dataset.status = "error";
    out.textContent = String((e && (e.message || e.str)) || e);
  }
  out.dataset.charts = document.querySelectorAll("pre.mermaid svg").length;
  out.dataset.errorSvgs = document.querySelectorAll('svg[aria-roledescription="error"]').length;
  out.dataset.plots = document.querySelectorAll("pre.mermaid svg .line-plot-0, pre.mermaid svg [class*=line-plot]").length;
});
"""


@dataclass(frozen=True)
class Rendered:
    status: str  # "ok" | "error" | "" (the page never reported: the browser or the script failed)
    charts: int
    error_svgs: int
    plots: int
    message: str
    html: Path


def browser() -> str | None:
    explicit = os.environ.get("PARITY_GATE_CHROMIUM")
    return explicit or next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def missing() -> str:
    """Why the comment cannot be rendered here (empty when it can)."""
    if browser() is None:
        return "no Chromium (apt-get install chromium; or set PARITY_GATE_CHROMIUM)"
    if not MERMAID.is_file():
        return "no Mermaid from npm (npm ci --prefix tests/render)"
    return ""


def to_html(markdown: str) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    body = md.render(markdown)
    body = _ALERT.sub(lambda m: f'<blockquote class="markdown-alert"><p class="markdown-alert-title">'
                      f"{m[1].title()}</p><p>", body)
    return _MERMAID.sub(lambda m: f'<pre class="mermaid">{m[1]}</pre>', body)


def page(markdown: str) -> str:
    return ("<!doctype html><html><head><meta charset='utf-8'><title>parity-gate comment</title>"
            f"<style>{CSS}</style><script src='{MERMAID.as_uri()}'></script></head><body>"
            f"{to_html(markdown)}<div id='render-status' hidden></div><script>{SCRIPT}</script></body></html>")


def render(markdown: str, workdir: Path, screenshot: Path | None = None, width: int = 1000,
           height: int = 2200) -> Rendered:
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "comment.html"
    target.write_text(page(markdown), encoding="utf-8")
    base = [browser() or "chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--allow-file-access-from-files", "--virtual-time-budget=20000", f"--user-data-dir={workdir / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", target.as_uri()], capture_output=True, text=True, timeout=180)
    if screenshot is not None:
        subprocess.run([*base, f"--window-size={width},{height}", f"--screenshot={screenshot}", target.as_uri()],
                       capture_output=True, text=True, timeout=180, check=True)
    found = re.search(r'<div id="render-status"([^>]*)>(.*?)</div>', dom.stdout, re.S)
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', found[1])) if found else {}
    return Rendered(attrs.get("status", ""), int(attrs.get("charts", 0)), int(attrs.get("error-svgs", 0)),
                    int(attrs.get("plots", 0)), html.unescape(found[2]) if found else dom.stderr[-2000:], target)


if __name__ == "__main__":  # python -m tests.support.comment_render COMMENT.md
    import sys

    print(json.dumps(render(Path(sys.argv[1]).read_text(), Path(sys.argv[1]).parent / "render").__dict__,
                     default=str, indent=1))

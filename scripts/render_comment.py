"""Render a PR comment as GitHub shows it (headless Chromium, Mermaid from npm) and save a screenshot.

    PYTHONPATH=. python scripts/render_comment.py --demo --png docs/comment-regressed.png
    PYTHONPATH=. python scripts/render_comment.py --report report.json --png comment.png

--demo makes a real regressed report first: `check` on the bundled examples after a change to
tiny-cnn's code (block1.bn2's eps from 1e-5 to 1e-3, the weights untouched), against the committed
baselines. Needs Chromium and `npm ci --prefix tests/render` (scripts/test.sh installs both).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.github.publish import reviewer_digest  # noqa: E402
from gate.render import Links, render_markdown  # noqa: E402
from gate.verdict.report_file import load_report  # noqa: E402
from gate.verdict.types import Report  # noqa: E402
from tests.support.comment_render import missing, render  # noqa: E402

FAULT = '''from examples.zoo import tiny_cnn as _tiny_cnn


def tiny_cnn():
    model = _tiny_cnn()
    model.block1.bn2.eps = 1e-3  # the change under review: same weights, other code
    return model
'''
SHA = "4f1c2e9a7b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e"
LINKS = Links("https://github.com/octo/models/actions/runs/11853490272",
              "https://github.com/octo/models/actions/runs/11853490272/artifacts/2211457813", SHA,
              f"https://github.com/octo/models/commit/{SHA}", "run 11853490272", "parity-gate on Linux X64")


def demo_report(tmp: Path) -> Report:
    from gate import commands
    from gate.config import load_config

    shutil.copytree(ROOT / "examples", tmp / "examples")
    shutil.copytree(ROOT / "baselines", tmp / "baselines")
    (tmp / "fault_zoo.py").write_text(FAULT)
    text = (ROOT / "pyproject.toml").read_text()
    config = text[text.index("[tool.parity-gate]"):].replace('"examples.zoo:tiny_cnn"', '"fault_zoo:tiny_cnn"')
    (tmp / "pyproject.toml").write_text(config)
    cfg = load_config(tmp / "pyproject.toml")
    here = Path.cwd()
    os.chdir(tmp)  # paths in the report are relative to where check runs: the repository root
    try:
        return commands.check(cfg, cfg.models, cfg.providers)
    finally:
        os.chdir(here)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--report", type=Path, help="a JSON report (check/report --json)")
    source.add_argument("--demo", action="store_true", help="make a real regressed report on the examples")
    ap.add_argument("--png", type=Path, required=True, help="where to save the screenshot")
    ap.add_argument("--markdown", type=Path, help="also save the comment's Markdown here")
    ap.add_argument("--height", type=int, default=1500)
    args = ap.parse_args(argv)
    if missing():
        print(f"render_comment: {missing()}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="parity-gate-render-") as tmp:
        report = demo_report(Path(tmp)) if args.demo else load_report(args.report)
        marker = f"<!-- parity-gate:comment id=default -->\n<!-- parity-gate:digest {reviewer_digest(report)} -->"
        markdown = render_markdown(report, marker=marker, links=LINKS)
        if args.markdown:
            args.markdown.write_text(markdown, encoding="utf-8")
        shown = render(markdown, Path(tmp) / "render", screenshot=args.png.resolve(), width=960, height=args.height)
    print(f"{args.png}: Mermaid {shown.status or 'did not report'}, {shown.charts} chart(s)"
          + (f": {shown.message}" if shown.message else ""))
    return 0 if shown.status == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())

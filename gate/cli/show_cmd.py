"""``parity-gate show``: a baseline as text, for people (long lines folded) and for git (``--textconv``:
one line per layer, a broken file's error as text), numbers rounded to the reference's noise unless
``--all``; ``parity-gate diff-driver`` sets git up to use it in this clone. ``gate.cli.app`` calls
``register(app)``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gate.errors import FormatError, GateError

ConfigOpt = Annotated[Path | None, typer.Option("--config", envvar="PARITY_GATE_CONFIG",
                                                 help="Config file, to look a model name up in (default: as `check` finds it).")]


def show(file: Annotated[str, typer.Argument(help="A baseline (.msgpack.zst) file, or a configured model's name.",
                                             metavar="FILE|MODEL")],
         textconv: Annotated[bool, typer.Option("--textconv", help="As a git textconv driver: print a broken "
                                                "file's error as text and exit 0, so `git diff` still works.")] = False,
         all_: Annotated[bool, typer.Option(
             "--all", help="Every number exactly, and each runtime's rows (default: numbers rounded to the "
                           "reference's noise, one line per runtime).")] = False,
         config: ConfigOpt = None) -> None:
    """Print a baseline readably (also usable as a git textconv driver)."""
    from gate.formats.baseline.show import render_file

    try:
        text = render_file(_shown(file, config), full=all_)
        sys.stdout.write(text if textconv else _folded(text))
    except FormatError as exc:
        if not textconv:
            raise
        sys.stdout.write(f"invalid baseline: {exc}\n")


def git_diff(path: Annotated[str, typer.Argument(help="The baseline's path in the repository.")],
             old: Annotated[str, typer.Argument(help="The old side's file (/dev/null: none).")],
             old_hex: Annotated[str, typer.Argument()], old_mode: Annotated[str, typer.Argument()],
             new: Annotated[str, typer.Argument(help="The new side's file (/dev/null: none).")],
             rest: Annotated[list[str] | None, typer.Argument(
                 help="The new side's hash and mode, and a rename's.")] = None) -> None:
    """A changed baseline as git's external diff driver (`diff.parity-gate.command`, set by diff-driver):
    what moved first, then each layer that moved beyond noise, old line above new."""
    from gate.commands.baseline_diff import change_text

    def side(name: str) -> Path | None:
        return None if name == os.devnull or not Path(name).is_file() else Path(name)

    text = change_text(side(old), side(new), more=f"parity-gate show --all {path}")
    sys.stdout.write(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{text}\n")


def _folded(text: str, width: int = 120) -> str:
    """For people, long lines folded at spaces under their first word; git's textconv keeps one line
    per layer, so a diff names the layer on every changed line."""
    import textwrap

    return "".join("\n".join(textwrap.wrap(line, width, subsequent_indent="    ", break_long_words=False,
                                            break_on_hyphens=False)) + "\n" if len(line) > width else line + "\n"
                   for line in text.splitlines())


def _shown(name: str, config: Path | None) -> Path:
    """The file ``show`` prints: ``name`` itself, or the baseline of the configured model so named."""
    path = Path(name)
    if path.exists() or name.endswith(".zst") or "/" in name or os.sep in name:
        if not path.exists():
            raise GateError(f"`{name}`: no such file")
        return path
    from gate.commands.common import location
    from gate.config import find_config, load_config

    try:
        cfg = load_config(find_config(config))
    except GateError as exc:
        raise GateError(f"`{name}`: no such file, and no config to look it up as a model in ({exc})") from None
    spec = next((m for m in cfg.models if m.name == name), None)
    if spec is None:
        raise GateError(f"`{name}`: no such file, and {cfg.path} configures no model of that name")
    path = location(cfg, spec).path
    if not path.exists():
        raise GateError(f"model `{name}` has no baseline yet at {path}: create it with "
                        f"`parity-gate update-baseline --model {name}`")
    return path


def diff_driver(directory: Annotated[Path, typer.Option("--dir", help="A folder of the clone (default: here).")]
                = Path(".")) -> None:
    """Show baselines as text in `git diff` in this clone (git takes diff drivers from each clone's own
    config, never from the repository): run once per clone."""
    from gate.cli.console import console
    from gate.scaffold.diff_driver import DriverState, install, state

    for line in install(directory):
        console.print(f"[dim]{escape(line)}[/dim]", soft_wrap=True)
    now = state(directory)
    if now == DriverState.SET:
        console.print("[bold green]DIFF DRIVER SET[/bold green] | git diff shows baselines as text, one line "
                      "per layer, in this clone")
        return
    console.print(f"[yellow]warning:[/yellow] git diff still shows baselines as binary here: "
                  f"{escape(now.value)} (`git check-attr diff -- baselines/model.msgpack.zst` says which line "
                  "decides)", soft_wrap=True)
    raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    app.command("show")(show)
    app.command("diff-driver")(diff_driver)
    app.command("git-diff", hidden=True)(git_diff)

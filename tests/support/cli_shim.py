"""The `parity-gate` executable of the e2e tests' prepared environment (the action's `venv-path`).

It is the real `comment` and `merge` commands (gate.cli.github_cmds, gate.cli.merge_cmd) plus stand-ins for the
commands the action calls before it (check, export, collect, report, update-baseline): they
copy a fixture report / write a result file and exit with the code the test asks for, so the
action's control flow is tested without torch. Stand-in behaviour, set by the test:
PARITY_GATE_STUB_REPORT (fixture to copy for check/report), PARITY_GATE_STUB_EXIT (exit code),
PARITY_GATE_STUB_LOG (file that records each call's argv), PARITY_GATE_STUB_EXPORT_NOTHING,
PARITY_GATE_STUB_SHARE (the share folder a leg of a sharded update-baseline hands on).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Annotated

import typer

from gate.cli import merge_cmd
from gate.cli.github_cmds import register

app = typer.Typer(add_completion=False)


def _log() -> None:
    if os.environ.get("PARITY_GATE_STUB_LOG"):
        with open(os.environ["PARITY_GATE_STUB_LOG"], "a", encoding="utf-8") as f:
            env = {k: v for k, v in os.environ.items() if k.startswith("PARITY_GATE_") and not k.startswith("PARITY_GATE_STUB")}
            f.write(repr((sys.argv[1:], env)) + "\n")


def _finish(json_out: str | None, markdown_out: str | None) -> None:
    src = os.environ.get("PARITY_GATE_STUB_REPORT")
    if src and json_out:
        shutil.copyfile(src, json_out)
    if markdown_out:
        with open(markdown_out, "w", encoding="utf-8") as f:
            f.write("stub markdown\n")
    raise typer.Exit(int(os.environ.get("PARITY_GATE_STUB_EXIT", "0")))


@app.callback(invoke_without_command=True)
def main(version: Annotated[bool, typer.Option("--version")] = False) -> None:
    if version:
        typer.echo("parity-gate 0.1.0 (test shim)")
        raise typer.Exit(0)


@app.command()
def check(json_out: Annotated[str | None, typer.Option("--json")] = None,
          markdown_out: Annotated[str | None, typer.Option("--markdown")] = None) -> None:
    _log()
    _finish(json_out, markdown_out)


@app.command()
def report(files: list[str], json_out: Annotated[str | None, typer.Option("--json")] = None,
           markdown_out: Annotated[str | None, typer.Option("--markdown")] = None) -> None:
    _log()
    _finish(json_out, markdown_out)


@app.command()
def export(out: Annotated[str, typer.Option("--out")]) -> None:
    _log()
    if os.environ.get("PARITY_GATE_STUB_EXPORT_NOTHING"):
        raise typer.Exit(int(os.environ.get("PARITY_GATE_STUB_EXIT", "0")))
    os.makedirs(os.path.join(out, "tiny-cnn"), exist_ok=True)
    with open(os.path.join(out, "tiny-cnn", "run.msgpack.zst"), "wb") as f:
        f.write(b"exported run")
    raise typer.Exit(int(os.environ.get("PARITY_GATE_STUB_EXIT", "0")))


@app.command()
def collect(src: Annotated[str, typer.Option("--from")], out: Annotated[str, typer.Option("--out")]) -> None:
    _log()
    if not os.path.exists(os.path.join(src, "tiny-cnn", "run.msgpack.zst")):
        typer.echo(f"error: `{src}` holds no exported model", err=True)
        raise typer.Exit(2)
    with open(out, "wb") as f:
        f.write(f"result of {os.environ.get('PARITY_GATE_PROVIDERS', '')}".encode())


@app.command("update-baseline")
def update_baseline() -> None:
    _log()
    if os.environ.get("PARITY_GATE_SHARE_OUT"):  # a leg of a sharded re-recording hands on its share
        shutil.copytree(os.environ["PARITY_GATE_STUB_SHARE"], os.environ["PARITY_GATE_SHARE_OUT"])


register(app)
merge_cmd.register(app)

if __name__ == "__main__":
    app()

"""gate.github.actions and the annotations/outputs of gate.github.publish."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from gate.github.actions import ActionsEnv, InertLines, command, log_safe, write_outputs
from gate.github.publish import annotations
from gate.verdict.report_file import parse_report
from tests.support.action_runner import parse_output_file

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"


def test_outputs_survive_newlines_and_equals_signs(tmp_path):
    path = tmp_path / "out"
    write_outputs(str(path), {"a": "x=y", "b": "line1\nline2", "c": ""})
    assert parse_output_file(path) == {"a": "x=y", "b": "line1\nline2", "c": ""}


def test_workflow_commands_are_escaped():
    assert command("error", "50% done\nnext", title="a: b, c") == "::error title=a%3A b%2C c::50%25 done%0Anext"


def test_no_text_starts_a_workflow_command_in_a_log_line():
    for brk in ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]:
        assert log_safe(f"a{brk}::error::x").splitlines() == [f"a{ascii(brk)[1:-1]}::error::x"]
        assert len(command("error", f"a{brk}::error::x").splitlines()) == 1
    assert log_safe("  ::stop-commands::t") == "  :\\:stop-commands::t"
    assert log_safe("layer aten::add ##[add-mask]x") == "layer aten::add #\\#[add-mask]x"  # v1 matches anywhere
    assert log_safe("\u202eevil\u200b") == "\\u202eevil\\u200b" and log_safe("≈ 3×") == "≈ 3×"


def test_a_stream_written_in_pieces_never_starts_a_line_with_a_command():
    out = io.StringIO()
    stream = InertLines(out)
    for piece in ["model x", "\n", " ", ":", ":error::forged", "\r::notice::n\n#", "#[add-mask]s\n\u2028::warning::w\n"]:
        stream.write(piece)
        stream.flush()  # rich flushes after every print: a piece that could still become a command is held
    stream.close()
    assert out.getvalue() == "model x\n :\\:error::forged\r:\\:notice::n\n#\\#[add-mask]s\n\\u2028:\\:warning::w\n"


SPACES = [chr(c) for c in range(0x110000) if chr(c).isspace()]  # U+00A0, U+2003, U+3000, ...: all trimmed


def test_no_leading_whitespace_the_runner_trims_lets_a_line_start_a_command():
    out = io.StringIO()
    stream = InertLines(out)
    for space in SPACES:
        stream.write(f"x\n{space}::error::forged\n{space * 3}\t::stop-commands::p\n")
        assert not log_safe(f"{space}::add-mask::m").lstrip().startswith("::")
    stream.close()
    lines = [line.lstrip() for line in out.getvalue().replace("\r", "\n").split("\n")]
    assert len(lines) > 2 * len(SPACES) and not [line for line in lines if line.startswith("::")]


def test_print_and_echo_go_through_the_writer_and_only_annotations_pass():
    code = ("from gate.github.actions import inert_streams, write_command; import typer; inert_streams(); "
            "print('\\u3000::add-mask::m'); typer.echo('\\u00a0::error::e', err=True); "
            "write_command('::notice::ours'); print('x ##[group]g')")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert proc.stdout == "\u3000:\\:add-mask::m\n::notice::ours\nx #\\#[group]g\n"
    assert proc.stderr == "\u00a0:\\:error::e\n"


def test_the_consoles_of_check_and_report_are_inert_in_github_actions():
    code = ("from rich.markup import escape; from gate.cli.console import console, err_console; "
            "console.print('model ' + escape('x\\n::error title=a::b')); err_console.print(escape('::add-mask::m'))")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert proc.stdout == "model x\n:\\:error title=a::b\n" and proc.stderr == ":\\:add-mask::m\n"


def test_token_is_kept_out_of_repr():
    env = ActionsEnv.from_environ({"GITHUB_TOKEN": "ghs_secret", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "5"})
    assert "ghs_secret" not in repr(env)
    assert env.run_url == "https://github.com/o/r/actions/runs/5"


def test_annotations_lead_with_the_first_regression_and_stop_at_ten():
    report = json.loads((REPORTS / "regressed.json").read_text())
    lines = annotations(parse_report(json.dumps(report).encode(), "r"))
    assert lines[0].startswith("::error title=parity-gate%3A tiny-cnn regressed on CPUExecutionProvider (float32)::tiny-cnn: layer conv2")
    assert any("tiny-mlp has no baseline" in line for line in lines)
    many = {**report, "models": [dict(report["models"][0], name=f"m{i}") for i in range(15)]}
    assert len(annotations(parse_report(json.dumps(many).encode(), "r"))) == 10


def test_library_imports_neither_typer_nor_rich():
    import subprocess
    import sys

    code = ("import sys, gate.github, gate.render, gate.verdict.report_file, gate.commands, gate.verdict.judge, "
            "gate.scaffold, gate.github.install; "
            "print(sorted(m for m in ('typer', 'rich', 'torch', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

"""gate.cli.console: names and messages from models and files print as they are, never as
Rich markup (a dict output's layer is ``(model)[logits]``; a message may hold ``[/x]``)."""

from __future__ import annotations

from gate.cli import console as con
from gate.verdict.rows import Regression, Row
from gate.verdict.types import Hint, ModelVerdict, ProviderVerdict, Report


def test_layer_names_and_messages_are_not_markup():
    row = Row("(model)[logits]", "M", "fail", "ceiling", 0.5, 0.01, None, "bad [/x] [bold]")
    first = Regression("(model)[logits]", "M", "ceiling", 0.5, 0.01, "bad [/x]", "CPUExecutionProvider", "float32")
    runtime = ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "x86_64-avx2", "regressed",
                              first_regression=first, rows=[row])
    model = ModelVerdict("m", "regressed", providers=[runtime], first_regression=first,
                         hints=[Hint("layout", "attn[key]", "CPUExecutionProvider", "moved [red]")],
                         promoted={"layers.0.norm": 2}, below_float64={"enc[key]": "float32"})
    report = Report("regressed", [model], first_regression=Regression(**{**vars(first), "model": "m"}))
    with con.console.capture() as captured:
        con.render_report(report)
    text = captured.get()
    assert "(model)[logits]: ceiling 0.5 > 0.01" in text
    assert "hint layout at attn[key] on CPUExecutionProvider: moved [red]" in text
    assert "reference: 2 casts to a lower precision promoted to float64 in 1 layer" in text
    assert "reference below float64 in 1 layer: enc[key] (float32)" in text
    assert text.rstrip().splitlines()[-1] == (
        "FAILED | first regression: m (model)[logits] on CPUExecutionProvider (ceiling 0.5 > 0.01)")


def test_a_nan_inf_count_that_differs_reads_as_what_was_expected_and_is_no_worst_error():
    row = Row("scores", "Scores", "fail", "nonfinite", 20.0, 30.0, 30.0, "20 -Inf; baseline 30 -Inf")
    drift = Row("out", "Linear", "fail", "reference-drift", 0.5, 1e-9, 0.0)
    first = Regression("scores", "Scores", "nonfinite", 20.0, 30.0, row.message, "torch-cpu", "float64")
    ref = ProviderVerdict("torch-cpu", "reference", "float64", "cpu", "regressed", first_regression=first,
                          rows=[row, drift])
    model = ModelVerdict("att", "regressed", providers=[ref], first_regression=first)
    report = Report("regressed", [model], first_regression=Regression(**{**vars(first), "model": "att"}))
    lines = _render(report)
    assert lines[-1] == ("FAILED | first regression: att scores on torch-cpu (float64 reference) "
                         "(nonfinite 20 NaN/Inf, expected 30)")
    (table,) = [line for line in lines if "scores: nonfinite" in line]
    # the worst error is the drift's: a count is no error
    assert "20 NaN/Inf, expected 30" in table and "0.5" in table and "│ 20 " not in table


def _render(report: Report) -> list[str]:
    with con.console.capture() as captured:
        con.render_report(report)
    return captured.get().rstrip().splitlines()


def test_every_model_that_did_not_pass_gets_a_line_and_its_next_step_above_the_verdict():
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus

    first = Regression("conv2", "Conv2d", "error-growth", 0.004, 2e-6, None, "CPUExecutionProvider", "float32")
    regressed = ModelVerdict("a", "regressed", first_regression=first)
    loader = ProviderVerdict("CUDAExecutionProvider", "runtime", "float32", "gpu", "error", reason="required\nbut absent",
                             error_status=ErrorStatus.LOAD_FAIL)
    broken = ModelVerdict("b", "error", providers=[loader])
    empty = ModelVerdict("c", "error", error=RunError(ErrorStatus.INFER_FAIL, "model `c`: PyTorch forward failed"))
    missing = ModelVerdict("d", "no-baseline", update_command="parity-gate update-baseline --model d --config x.toml",
                           baseline_path="b/d.msgpack.zst")
    lines = _render(Report("error", [regressed, broken, empty, missing, ModelVerdict("e", "pass")]))
    assert lines[-9:] == [
        "  ✗ a: conv2 on CPUExecutionProvider (error-growth 0.004 > 2e-06)",
        "    next: the float64 reference holds; the ONNX graph, a provider or code only they run (float32 or "
        "export-only) changed — compare the layer rows of the report.",
        "  ✗ b: CUDAExecutionProvider LOAD_FAIL: required",
        "    next: `CUDAExecutionProvider` failed to load on its runner: run `parity-gate doctor` there — its ONNX "
        "Runtime build, drivers or provider options do not match (a provider listed in `require` must be available).",
        "  ✗ c: INFER_FAIL: model `c`: PyTorch forward failed",
        "    next: it failed (INFER_FAIL). Reproduce with `parity-gate check --model c`; the error is above.",
        "  ✗ d: no baseline",
        "    next: no baseline yet: run `parity-gate update-baseline --model d --config x.toml` and commit "
        "`b/d.msgpack.zst`.",
        "ERROR | b (and 1 more model): CUDAExecutionProvider LOAD_FAIL: required",
    ]


def test_the_verdict_line_names_the_model_the_exit_code_stands_for():
    """One model failed to build (3), a later one's baseline was refused (2): the run exits 2, so its last
    line names the refused baseline, not the build failure; the other error is counted."""
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus

    built = ModelVerdict("a", "error", error=RunError(ErrorStatus.BUILD_FAIL, "model `a`: factory raised"))
    refused = ModelVerdict("b", "error",
                           error=RunError(ErrorStatus.BAD_BASELINE, "baseline `b.msgpack.zst`: truncated"))
    report = Report("error", [built, refused])
    assert report.exit_code == 2
    assert _render(report)[-1] == ("ERROR | b (and 1 more model): BAD_BASELINE: baseline `b.msgpack.zst`: "
                                   "truncated")
    assert _render(Report("error", [built]))[-1] == "ERROR | a: BUILD_FAIL: model `a`: factory raised"


def test_one_model_that_did_not_pass_gets_the_comments_next_step_above_the_verdict():
    from gate.render.next_steps import step_words

    first = Regression("stem.0", "Conv2d", "reference-drift", 0.004, 1e-9, None, "torch-cpu", "float64")
    reference = ProviderVerdict("torch-cpu", "reference", "float64", "cpu", "regressed", first_regression=first)
    model = ModelVerdict("m", "regressed", providers=[reference], first_regression=first, baseline_path="b/m.msgpack.zst")
    lines = _render(Report("regressed", [model], first_regression=Regression(**{**vars(first), "model": "m"})))
    assert lines[-2] == ("  next: the model changed (its float64 reference moved first at `stem.0`). If that is "
                         "intended, run `parity-gate update-baseline --model m` and commit `b/m.msgpack.zst`.")
    assert step_words(model).startswith("the model changed (its float64 reference moved first at `stem.0`).")
    # beside a model that passed, the step names its model: lines about the other may stand above it
    lines = _render(Report("regressed", [ModelVerdict("a", "pass"), model],
                           first_regression=Regression(**{**vars(first), "model": "m"})))
    assert lines[-2].startswith("  next (m): the model changed (its float64 reference moved first at `stem.0`).")


def test_the_json_next_step_of_a_model_that_crashed_reproduces_it_and_never_rerecords():
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus
    from gate.verdict.report_file import report_document

    crashed = ModelVerdict("c", "error", error=RunError(ErrorStatus.INFER_FAIL, "forward failed"),
                           update_command="parity-gate update-baseline --model c")
    [doc] = report_document(Report("error", [crashed]))["models"]
    assert doc["next_step"] == {"kind": "model-failed", "command": "parity-gate check --model c",
                                "error_status": "INFER_FAIL"}
    assert "next_step" not in report_document(Report("pass", [ModelVerdict("p", "pass")]))["models"][0]


def test_counts_read_in_the_singular_when_there_is_one():
    model = ModelVerdict("m", "pass", layers=1)
    assert _render(Report("pass", [model]))[-1] == "PASSED | 1 model, 1 layer, providers: none"
    assert "m  ·  1 layer  ·" in "\n".join(_render(Report("pass", [model])))


def test_help_keeps_its_brackets_and_flags_read_as_flags():
    from typer.testing import CliRunner

    from gate.cli.app import app

    for command in ("check", "update-baseline", "report", "init", "comment"):
        text = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        assert "<bool>" not in text, command
    text = CliRunner().invoke(app, ["check", "--help"], terminal_width=200).output
    assert "(default: ./pyproject.toml with [tool.parity-gate], else ./parity-gate.toml)" in text
    assert "  --allow-missing-gpu  " in text and "-m, --model NAME" in text


def test_doctor_lists_every_command():
    from typer.testing import CliRunner

    from gate.cli.app import app

    with con.console.capture() as captured:
        CliRunner().invoke(app, ["doctor"])
    listed = next(line for line in captured.get().splitlines() if line.startswith("commands"))
    names = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if not c.hidden}
    assert {n.strip() for n in listed.split(None, 1)[1].split("(")[0].split(",")} == names
    assert {"list", "validate", "init", "comment", "show"} <= names


def test_ci_logs_keep_a_long_line_whole():
    # Under pytest, as in CI, neither stream is a terminal: a long progress line is never cut mid-token.
    assert not con.err_console.is_terminal
    line = "bert: CPUExecutionProvider: segment 2/3, to " + "encoder.layer.11.attention.output.dense" * 6
    with con.err_console.capture() as captured:
        con.err_console.print(line)
    assert captured.get() == line + "\n"


def _passed() -> Report:
    rows = [Row("fc", "Linear", "pass", "error-growth", 2e-7, 1e-6, 2e-7)]
    reason = "compared with the baseline of device class x86_64-avx2 (none for x86_64-avx512)"
    runtime = ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "x86_64-avx2", "pass", rows=rows,
                              reason=reason)
    return Report("pass", [ModelVerdict("m", "pass", layers=1, providers=[runtime])])


def test_a_model_that_passed_is_three_lines_unless_verbose():
    with con.console.capture() as captured:
        con.render_report(_passed())
    lines = captured.get().rstrip().splitlines()
    assert lines[1] == "  passed (worst error) CPUExecutionProvider float32 2e-07" and len(lines) == 4, lines
    with con.console.capture() as captured:
        con.render_report(_passed(), verbose=True)
    verbose = captured.get()
    assert "first regression" in verbose and "compared with the baseline of device class" in verbose


def test_progress_prints_one_line_per_stage_unless_verbose():
    ended = "  m: building — 0.0 s"
    for verbose, expected in ((False, [ended]), (True, ["· m: building", ended])):
        with con.err_console.capture() as captured:
            with con.progress_display(verbose) as progress:
                progress("m: building")
        got = [line.split(" — ")[0] + " — 0.0 s" if " — " in line else line
               for line in captured.get().rstrip().splitlines()]
        assert got == expected, got


def test_a_passing_models_worst_error_leaves_out_rows_a_refactor_moved():
    """A BatchNorm folded into its conv moved that layer's reference by 0.6 (said in the structure note): the
    passed line's worst error is the reference's real one, not the move."""
    rows = [Row("conv", "Conv2d", "moved", "reference-drift", 0.616, 1e-9),
            Row("fc", "Linear", "pass", "reference-drift", 2e-16, 1e-9)]
    reference = ProviderVerdict("torch-cpu", "reference", "float64", "cpu", "pass", rows=rows)
    line = next(line for line in _render(Report("pass", [ModelVerdict("m", "pass", providers=[reference])]))
                if "passed" in line)
    assert "torch-cpu float64 reference 2e-16" in line and "0.616" not in line

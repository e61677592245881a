"""The rows of data-dependent layers as the console and the comment show them: per runtime, the
rule that judged each, what it found, and how the layer is known."""

from __future__ import annotations

from gate.cli import console as con
from gate.render.data_dependent_md import data_dependent_table
from gate.render.markdown import render_markdown
from gate.verdict.rows import Regression, Row
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

BOXES = Row("(model)[0][boxes]", "SSD", "fail", "detections", 2.0, 0.0,
            message="20 matched of 28 in the reference and 20 here (IoU ≥ 0.5, same label); with score ≥ 0.5: "
                    "2 of the reference's unmatched (highest score 0.692)", data_dependent="op")
REFINE = Row("refine", "Linear", "pass", "recorded", 0.0, 1e-6, message="torch-cpu gives what its baseline recorded",
             data_dependent="runs")
PLAIN = Row("box_head", "Conv2d", "pass", "error-growth", 1e-7, 1e-6)


def report() -> Report:
    first = Regression.of(BOXES)
    ort = ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "x86_64-avx2", "regressed",
                          first_regression=first, rows=[PLAIN, BOXES])
    torch_cpu = ProviderVerdict("torch-cpu", "runtime", "float32", "x86_64-avx2", "pass", rows=[PLAIN, REFINE])
    reference = ProviderVerdict("torch-cpu", "reference", "float64", "cpu", "pass",
                                rows=[Row("(model)[0][boxes]", "SSD", "pass", "reference-drift", 0.0, 1e-9,
                                          data_dependent="op")])
    full = Regression(**{**vars(first), "provider": "CPUExecutionProvider", "precision": "float32"})
    model = ModelVerdict("detector", "regressed", providers=[reference, torch_cpu, ort], first_regression=full)
    return Report("regressed", [model], first_regression=Regression(**{**vars(full), "model": "detector"}))


def test_the_comment_tables_each_runtime_row_with_its_rule():
    table = data_dependent_table(report().models[0].providers)
    assert "| `torch-cpu` | `refine` | runs | recorded | ✅ pass |" in table
    assert "| `CPUExecutionProvider` | `(model)[0][boxes]` | op | detections | ❌ fail | 2 | 0 |" in table
    assert "box_head" not in table and "reference-drift" not in table  # the reference judges them as any layer
    assert "**Data-dependent shapes**" in render_markdown(report())


def test_the_console_says_the_rule_and_what_it_found():
    with con.console.capture() as captured:
        con.render_report(report())
    text = captured.get()
    assert "data-dependent (model)[0][boxes] on CPUExecutionProvider (fail), detections: 20 matched of 28" in text
    assert "data-dependent refine on torch-cpu (pass), recorded: torch-cpu gives what its baseline recorded" in text
    worst = next(line for line in text.splitlines() if line.startswith("CPUExecutionProvider"))
    assert "1e-07" in worst  # a count of unmatched detections is no error: not the worst error

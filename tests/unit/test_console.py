"""gate.cli.console: names and messages from models and files print as they are, never as
Rich markup (a dict output's layer is ``(model)[logits]``; a message may hold ``[/x]``)."""

from __future__ import annotations

from gate.cli import console as con
from gate.verdict.types import Hint, ModelVerdict, ProviderVerdict, Regression, Report, Row


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

"""gate.render.outputs_md: allclose at NumPy's fixed tolerances is a number on a pass, never a mark;
a gated allclose (``output-tolerance``) that failed is marked on every page."""

from __future__ import annotations

import numpy as np

from gate.cli import console as con
from gate.core.exact import exact
from gate.render import render_markdown
from gate.render.junit import render_junit
from gate.verdict.checks import _allclose
from gate.verdict.rows import Regression, Row
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

EXACT = {"max_abs": 6.1e-08, "max_rel": 4.7e-04, "allclose": False, "mismatched": 190, "count": 4096,
         "rtol": 1e-05, "atol": 1e-08, "worst_index": [1, 6], "expected": 6.27e-05, "actual": 6.28e-05}


def _report(row: Row, status: str) -> Report:
    first = Regression(row.layer, "M", row.check, row.value, row.threshold, row.message,
                       "CPUExecutionProvider", "float32") if row.failed else None
    runtime = ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "x86_64-avx2",
                              "regressed" if row.failed else "pass", first_regression=first, rows=[row])
    model = ModelVerdict("m", status, providers=[runtime], first_regression=first)
    overall = Regression(**{**vars(first), "model": "m"}) if first else None
    return Report(status, [model], first_regression=overall)


def _console(report: Report, verbose: bool) -> str:
    with con.console.capture() as captured:
        con.render_report(report, verbose=verbose)
    return captured.get()


def _pages(report: Report) -> dict[str, str]:
    return {"comment": render_markdown(report), "summary": render_markdown(report, summary=True),
            "console": _console(report, verbose=True), "brief console": _console(report, verbose=False),
            "junit": render_junit(report)}


def test_a_pass_with_allclose_failing_at_numpy_tolerances_shows_no_mark():
    row = Row("(model)", "M", "pass", "error-growth", 1e-7, 1e-6, 1e-7, exact=EXACT)
    pages = _pages(_report(row, "pass"))
    for name, text in pages.items():
        assert "❌" not in text and "not allclose" not in text, name
    assert "| 190 of 4,096 outside rtol 1.00e-05, atol 1.00e-08 |" in pages["comment"]
    assert "allclose: 190 of 4,096 outside rtol 1e-05, atol 1e-08" in pages["console"]


def test_a_pass_within_tolerance_says_so_without_a_mark():
    within = {**EXACT, "allclose": True, "mismatched": 0}
    row = Row("(model)", "M", "pass", "error-growth", 1e-7, 1e-6, 1e-7, exact=within)
    pages = _pages(_report(row, "pass"))
    assert "| all within rtol 1.00e-05, atol 1.00e-08 |" in pages["comment"]


def test_a_gated_allclose_that_failed_is_marked():
    """``output-tolerance`` set: allclose is a gate of its own, and its failure a real mark."""
    row = Row("(model)", "M", "fail", "allclose", 6.1e-08, 1e-12, None, "allclose(rtol=0, atol=1e-12) fails",
              exact=EXACT)
    pages = _pages(_report(row, "regressed"))
    assert "| ❌ 190 of 4,096 outside rtol 1.00e-05, atol 1.00e-08 |" in pages["comment"]
    assert "allclose: 190 of 4,096 outside" in pages["console"]
    assert 'type="allclose"' in pages["junit"]


def test_another_check_failing_on_the_output_does_not_mark_allclose():
    """The row failed on error growth: allclose at NumPy's tolerances stays a number."""
    row = Row("(model)", "M", "fail", "error-growth", 1e-3, 1e-6, 1e-7, "grew", exact=EXACT)
    comment = _pages(_report(row, "regressed"))["comment"]
    assert "| 190 of 4,096 outside rtol" in comment and "❌ 190" not in comment


def _judged(actual: np.ndarray, expected: np.ndarray, tolerance: tuple[float, float] | None) -> Report:
    """The output row as the judge leaves it: exact metrics of real arrays, ``output-tolerance`` or none."""
    row = Row("(model)", "M", "pass", "error-growth", 1e-7, 1e-6, 1e-7)
    row = _allclose(row, exact(actual, expected, tolerance), tolerance)
    return _report(row, "regressed" if row.failed else "pass")


def test_the_worst_element_shows_the_digits_that_tell_its_values_apart_and_ungated_allclose_informs():
    """Float32 outputs a few ulps off near zero fail NumPy's tolerances: with no output-tolerance that only
    informs, and the worst element reads with the digits that make its two values differ, never the same
    number twice. Twin: with output-tolerance set and failing, it stays marked."""
    expected = np.linspace(1e-3, 1.0, 20)
    expected[6] = 6.27e-05
    actual = expected + 2e-8
    comment = render_markdown(_judged(actual, expected, None))
    (line,) = [x for x in comment.splitlines() if x.startswith("| `CPUExecutionProvider` | `(model)`")]
    assert "❌" not in line, line
    assert "beyond rtol 1.00e-05, atol 1.00e-08 (information: no output-tolerance)" in line, line
    got, want = line.split("expected ")[1].rstrip(" |").split(", got ")
    assert got != want and float(got) != float(want), line
    gated = render_markdown(_judged(actual, expected, (0.0, 1e-12)))
    assert "| ❌ " in gated and "outside rtol 0, atol 1.00e-12 |" in gated and "information" not in gated

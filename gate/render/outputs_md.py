"""The model outputs' exact metrics as a Markdown table. ``np.allclose`` at NumPy's tolerances fails near
zero on almost any float32 model, so a row is marked failed only where ``output-tolerance`` gates.
"""

from __future__ import annotations

from collections.abc import Callable

from gate.core.status import Check
from gate.render.notices import MAX_LIST
from gate.render.text import code, num, plain, row
from gate.verdict.rows import Row
from gate.verdict.types import ProviderVerdict


def closeness(row: Row, number: Callable[[object], str] = num) -> tuple[str, bool]:
    """What allclose found on an output row, in words ("all within rtol 1e-05, atol 1e-08", "190 of
    4,096 outside ..."), and whether it failed the row: only a gated allclose (``output-tolerance``) can."""
    e = row.exact or {}
    tolerance = f"rtol {number(e.get('rtol'))}, atol {number(e.get('atol'))}"
    if e.get("allclose"):
        return f"all within {tolerance}", False
    if e.get("gated") is False:  # NumPy's tolerances fail near zero on almost any float32 model
        return (f"{number(e.get('mismatched'))} of {number(e.get('count'))} beyond {tolerance} (information: "
                "no output-tolerance)", False)
    return (f"{number(e.get('mismatched'))} of {number(e.get('count'))} outside {tolerance}",
            row.failed and row.check == Check.ALLCLOSE)


def apart(expected: object, actual: object) -> tuple[str, str]:
    """The two values with the fewest significant digits (3 to 17) that tell them apart, as ``num`` writes
    them where they read apart at 3 or are the same."""
    if not (isinstance(expected, float) and isinstance(actual, float)) or expected == actual:
        return num(expected), num(actual)
    digits = next((d for d in range(3, 18) if f"{expected:.{d}g}" != f"{actual:.{d}g}"), 17)
    return (num(expected), num(actual)) if digits == 3 else (f"{expected:.{digits}g}", f"{actual:.{digits}g}")


def outputs_table(providers: list[ProviderVerdict]) -> str:
    rows = [(p, r) for p in providers for r in p.rows if r.exact]
    if not rows:
        return ""
    lines = ["| provider | output | max-abs | max-rel | allclose | worst element |",
             "| --- | --- | ---: | ---: | --- | --- |"]
    for p, r in rows[:MAX_LIST]:
        e = r.exact
        assert e is not None  # only rows with exact metrics are listed
        index = e.get("worst_index")
        where = ", ".join(str(i) for i in index) if isinstance(index, list) else ""
        words, failed = closeness(r)
        expected, actual = apart(e.get("expected"), e.get("actual"))
        lines.append(row(code(p.name), code(r.layer), num(e.get("max_abs")), num(e.get("max_rel")),
                         f"{'❌ ' if failed else ''}{words}", f"[{plain(where, 60)}]: expected {expected}, got {actual}"))
    return "**Outputs** (full tensors, against the float64 reference)\n\n" + "\n".join(lines)

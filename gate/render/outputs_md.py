"""The model outputs' exact metrics as a Markdown table (full tensors, per runtime)."""

from __future__ import annotations

from gate.render.notices import MAX_LIST
from gate.render.text import code, num, plain
from gate.verdict.types import ProviderVerdict


def outputs_table(providers: list[ProviderVerdict]) -> str:
    """The model outputs' exact metrics (full tensors), per runtime."""
    rows = [(p, r) for p in providers for r in p.rows if r.exact]
    if not rows:
        return ""
    lines = ["| provider | output | max-abs | max-rel | allclose | worst element |",
             "| --- | --- | ---: | ---: | --- | --- |"]
    for p, r in rows[:MAX_LIST]:
        e = r.exact
        index = e.get("worst_index")
        where = ", ".join(str(i) for i in index) if isinstance(index, list) else ""
        verdict = "✅" if e.get("allclose") else f"❌ {num(e.get('mismatched'))} of {num(e.get('count'))}"
        lines.append(f"| {code(p.name)} | {code(r.layer)} | {num(e.get('max_abs'))} | {num(e.get('max_rel'))} | "
                     f"{verdict} (rtol {num(e.get('rtol'))}, atol {num(e.get('atol'))}) | "
                     f"[{plain(where, 60)}]: expected {num(e.get('expected'))}, got {num(e.get('actual'))} |")
    return "**Outputs** (full tensors, against the float64 reference)\n\n" + "\n".join(lines)

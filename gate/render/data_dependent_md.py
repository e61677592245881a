"""The layers whose shape depends on values, as a Markdown table: per runtime, the rule that judged
each (docs/verdict.md, "Data-dependent shapes")."""

from __future__ import annotations

from gate.core.status import Role
from gate.render.icons import icon
from gate.render.notices import MAX_LIST
from gate.render.text import code, num, plain, row
from gate.verdict.rows import Row
from gate.verdict.types import ProviderVerdict


def dependent_rows(providers: list[ProviderVerdict]) -> list[tuple[ProviderVerdict, Row]]:
    """The runtimes' rows of data-dependent layers (the reference judges them as any layer)."""
    return [(p, r) for p in providers if p.role == Role.RUNTIME for r in p.rows if r.data_dependent is not None]


def data_dependent_table(providers: list[ProviderVerdict]) -> str:
    rows = dependent_rows(providers)
    if not rows:
        return ""
    lines = ["| provider | layer | known from | rule | status | value | threshold | detail |",
             "| --- | --- | --- | --- | --- | ---: | ---: | --- |"]
    for p, r in rows[:MAX_LIST]:
        lines.append(row(code(p.name), code(r.layer), plain(r.data_dependent, 10), plain(r.check or "", 20),
                         f"{icon(r.status)} {plain(r.status, 10)}", num(r.value), num(r.threshold),
                         plain(r.message or "judged as any layer", 300)))
    if len(rows) > MAX_LIST:
        lines.append(f"| … {len(rows) - MAX_LIST} more rows | | | | | | | |")
    return ("**Data-dependent shapes** (the number of elements depends on values: each runtime row says "
            "which rule judged it)\n\n" + "\n".join(lines))

"""A target's per-layer table in the comment: one row per layer (the notable ones first when the
comment must be short), a note that several rows share said once below the table."""

from __future__ import annotations

from collections import Counter

from gate.core.status import RowStatus
from gate.render.icons import icon
from gate.render.text import attr, code, num, plain, row, times
from gate.verdict.rows import Row
from gate.verdict.types import ProviderVerdict

QUIET_ROWS = ("pass", "folded")


def layer_table(model: str, p: ProviderVerdict, cap: int | None, open_: bool) -> tuple[str, int]:
    """The collapsible table of ``p``'s rows (at most ``cap`` of them), and how many rows it shows."""
    layers = p.rows
    chosen = choose_rows(layers, cap)
    summary = (f"<summary><b>{attr(model)}</b> · {attr(p.name)} ({attr(p.precision or '?', 20)}): "
               f"{p.failed} of {p.checked:,} layers checked failed</summary>")  # as the provider table counts
    rows = ["| # | layer | type | status | check | value | threshold | baseline | note |",
            "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | --- |"]
    notes = _shared_notes([layers[i] for i in chosen])
    prev = -1
    for i in chosen:
        if i != prev + 1:
            rows.append(f"| … | {i - prev - 1:,} rows not shown | | | | | | | |")
        rows.append(_row_line(i, layers[i], notes))
        prev = i
    if prev != len(layers) - 1:
        rows.append(f"| … | {len(layers) - prev - 1:,} rows not shown | | | | | | | |")
    listed = "".join(f"\n\n{k}. {note} ({n:,} rows)" for k, (note, n) in enumerate(notes.values(), 1))
    return (f"<details{' open' if open_ else ''}>\n{summary}\n\n" + "\n".join(rows) + listed + "\n\n</details>",
            len(chosen))


def _note(row: Row) -> str:
    # A data-dependent layer's note says what its rule found, passing or not.
    said = row.status not in QUIET_ROWS or row.data_dependent is not None
    return plain(row.message, 160) if row.message and said else ""


def _shared_notes(rows: list[Row]) -> dict[str, tuple[str, int]]:
    """Notes that more than one row of a table would repeat: said once below it, numbered."""
    counts = Counter(n for n in map(_note, rows) if n)
    return {n: (n, c) for n, c in counts.items() if c > 1}


def _row_line(i: int, r: Row, shared: dict[str, tuple[str, int]] | None = None) -> str:
    note = _note(r)
    if shared and note in shared:
        note = f"note {list(shared).index(note) + 1}"
    ratio = times(r.error, r.baseline) if r.status == RowStatus.FAIL else ""  # of errors, never of counts
    return row(str(i + 1), code(r.layer), code(r.type, 60) if r.type else "",
               f"{icon(r.status)} {plain(r.status, 20)}", plain(r.check or "", 40),
               f"{num(r.value)}{f' ({ratio})' if ratio else ''}", num(r.threshold), num(r.baseline), note)


def choose_rows(layers: list[Row], cap: int | None) -> list[int]:
    """All rows, or the notable ones (failures, new/missing layers) first, then the rest in order."""
    if cap is None or len(layers) <= cap:
        return list(range(len(layers)))
    notable = [i for i, row in enumerate(layers) if row.status not in QUIET_ROWS]
    chosen = notable[:cap]
    if len(chosen) < cap:  # fill with the rows leading up to the first notable one (its context)
        start, taken = (notable[0] if notable else 0), set(chosen)
        context = [i for i in range(max(0, start - (cap - len(chosen))), len(layers)) if i not in taken]
        chosen += context[: cap - len(chosen)]
    return sorted(chosen)

"""A sweep's support matrix in the PR comment: hundreds of passing cases would bury it, so each sweep is
one collapsed ``<details>`` block; failing cases also get their own section above it.
"""

from __future__ import annotations

from gate.core.status import CellStatus
from gate.render.icons import icon
from gate.render.text import attr, clip, code, num, plain, row
from gate.verdict.sweeps import Cell, SweepMatrix

MAX_CASES = 400  # rows of one matrix in a comment; the JSON report has them all


def cell_md(c: Cell) -> str:
    mark = icon(c.status, unknown="💥")  # an ErrorStatus: the case failed
    if c.status == CellStatus.SKIPPED:
        return f"{mark} {plain(clip(c.reason or 'skipped', 60), 80)}"
    text = f"{mark} {plain(c.status, 20)}" if c.status != "ok" else mark
    if c.error is not None:
        text += f" {num(c.error)}"
    if c.anchor_error is not None:
        text += f" (anchor {num(c.anchor_error)})"
    if c.latency_ms is not None:
        text += f" · {num(c.latency_ms)}" + (f"/{num(c.latency_p90_ms)}" if c.latency_p90_ms is not None else "") + " ms"
    return text


def sweep_section(mx: SweepMatrix) -> str:
    failing = mx.failing
    state = f"{len(failing)} of {len(mx.cases)} cases not ok" if failing else f"all {len(mx.cases)} cases ok"
    head = [row("case", *(code(p) for p in mx.providers)),
            "| --- | " + " | ".join("---" for _ in mx.providers) + " |"]
    rows = [row(code(case), *(cell_md(cells[p]) for p in mx.providers))
            for case, cells in mx.cases[:MAX_CASES]]
    if len(mx.cases) > MAX_CASES:
        rows.append(f"| … {len(mx.cases) - MAX_CASES} more cases (JSON report) | " + " | " * len(mx.providers))
    if mx.pairs:
        rows += ["", "| pair | provider | outputs differ by | tolerance | |", "| --- | --- | ---: | ---: | --- |"]
        rows += [row(f"{code(left)} vs {code(c.other)}", code(c.provider), num(c.error), num(c.tolerance),
                     icon(c.status)) for left, c in mx.pairs[:MAX_CASES]]
    return (f"<details{' open' if failing else ''}><summary>Sweep <code>{attr(mx.name)}</code>: {attr(state)} "
            "(cells: worst error against the float64 reference · latency median/p90)</summary>\n\n"
            + "\n".join(head + rows) + "\n\n</details>")

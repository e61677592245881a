"""The zoo's Markdown: the run's facts (command, machine, date, versions, pass rate) and one table row
per architecture, written between two markers in ``docs/models.md`` so the prose around it stays."""

from __future__ import annotations

import re
from pathlib import Path

BEGIN, END = "<!-- zoo-table:begin -->", "<!-- zoo-table:end -->"
PROVIDERS = ("torch-cpu float64", "torch-cpu float32", "CPUExecutionProvider float32")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _checked(row: dict) -> str:
    counts = row.get("checked") or {}
    return " / ".join(str(counts[p]["checked"]) if p in counts else "—" for p in PROVIDERS)


def _first(row: dict) -> str:
    first = (row.get("fault") or {}).get("first_regression")
    return f"`{first['layer']}` ({first['check']}, {first['provider']})" if first else "—"


def _status(row: dict) -> str:
    if row["gated"]:
        return "gated"
    return f"**{row['status']}**: {row['reason']}" if row.get("reason") else f"**{row['status']}**"


def summary(rows: list[dict]) -> tuple[int, int, float]:
    gated = sum(r["gated"] for r in rows)
    return gated, len(rows), (100.0 * gated / len(rows) if rows else 0.0)


def render(data: dict) -> str:
    rows = data["rows"]
    gated, total, rate = summary(rows)
    v = data["versions"]
    lines = [
        f"**{gated} of {total} rows gated end to end ({rate:.0f}%)**: clean `check` passed and the weight fault "
        "was named at its module.",
        "",
        f"- command: `{data['command']}` at commit {data.get('commit', 'unknown')}",
        *(f"- rerun on {r['date']} at commit {r.get('commit', 'unknown')}: `{r['command']}`"
          for r in data.get("reruns", [])),
        f"- machine: {data['machine']}",
        f"- date: {data['date']}; the rows' commands took {sum(r['total_s'] for r in rows) / 60:.0f} min in all",
        "- versions: " + ", ".join(f"{k} {v[k]}" for k in v),
        "",
        "| model | family | layers | checked: float64 ref / torch-cpu / CPU EP | fault in (`.weight` x1.001) "
        "| first regression with the fault | check s | check peak GB | status |",
        "| --- | --- | ---: | --- | --- | --- | ---: | ---: | --- |",
    ]
    for r in rows:
        step = r["steps"].get("check") or {}
        wall = f"{step['wall_s']:.1f}" if step else "—"
        peak = f"{step['peak_gb']:.2f}" if step else "—"
        fault = f"`{r['fault_layer']}`" if r.get("fault_layer") else "—"
        name = f"{r['name']}" + (f" <sub>{_cell(r['note'])}</sub>" if r.get("note") else "")
        lines.append(f"| {name} | {r['family']} | {r.get('layers') or '—'} | {_checked(r)} | {fault} | "
                     f"{_cell(_first(r))} | {wall} | {peak} | {_cell(_status(r))} |")
    return "\n".join(lines)


def write(path: Path, data: dict) -> None:
    """Replace the block between the markers (append one when the file has none)."""
    block = f"{BEGIN}\n{render(data)}\n{END}"
    text = path.read_text() if path.exists() else "# Models\n\n"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)

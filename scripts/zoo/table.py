"""The zoo's Markdown: the run's facts (command, machine, date, versions, pass rate) and one table row
per architecture, written between two markers in ``docs/models.md`` so the prose around it stays."""

from __future__ import annotations

import re
from pathlib import Path

BEGIN, END = "<!-- zoo-table:begin -->", "<!-- zoo-table:end -->"  # the block of every row (``markers``)
PROVIDERS = ("torch-cpu float64", "torch-cpu float32", "CPUExecutionProvider float32")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _checked(row: dict) -> str:
    counts = row.get("checked") or {}
    return " / ".join(str(counts[p]["checked"]) if p in counts else "—" for p in PROVIDERS)


def _seconds(row: dict, key: str) -> str:
    step = row["steps"].get(key) or {}
    return f"{step['wall_s']:.1f}" if step else "—"


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
        f"**{gated} of {total} rows gated end to end ({rate:.0f}%)**: the clean `check --full` and `check` passed, "
        "the weight fault was named at its module and the graph fault at its module on the execution provider.",
        "",
        f"- command: `{data['command']}` at commit {data.get('commit', 'unknown')}",
        *(f"- rerun on {r['date']} at commit {r.get('commit', 'unknown')}: `{r['command']}`"
          for r in data.get("reruns", [])),
        f"- machine: {data['machine']}",
        f"- date: {data['date']}; the rows' commands took {sum(r['total_s'] for r in rows) / 60:.0f} min in all",
        "- versions: " + ", ".join(f"{k} {v[k]}" for k in v),
        "",
        "A gated row's faults were each named at the module in their column; a row that is not gated says "
        "what its check named instead. The JSON has every first regression.",
        "",
        "| model | family | layers | checked: float64 ref / torch-cpu / CPU EP | weight fault in (`.weight` x1.001) "
        "| graph fault in (a weight as float16) | check s: --full / default | check --full peak GB | status |",
        "| --- | --- | ---: | --- | --- | --- | ---: | ---: | --- |",
    ]
    for r in rows:
        step = r["steps"].get("check") or {}
        peak = f"{step['peak_gb']:.2f}" if step else "—"
        fault = f"`{r['fault_layer']}`" if r.get("fault_layer") else "—"
        graph = (r.get("graph_fault") or {}).get("module")
        name = f"{r['name']}" + (f" <sub>{_cell(r['note'])}</sub>" if r.get("note") else "")
        lines.append(f"| {name} | {r['family']} | {r.get('layers') or '—'} | {_checked(r)} | {fault} | "
                     f"{f'`{graph}`' if graph else '—'} | {_seconds(r, 'check')} / {_seconds(r, 'check_default')} | "
                     f"{peak} | {_cell(_status(r))} |")
    return "\n".join(lines)


def markers(block: str = "table") -> tuple[str, str]:
    """The markers around a named block of the page (``table``: every row; others: a partial run)."""
    return f"<!-- zoo-{block}:begin -->", f"<!-- zoo-{block}:end -->"


def write(path: Path, data: dict, name: str = "table") -> None:
    """Replace the block between the markers (append one when the file has none)."""
    begin, end = markers(name)
    block = f"{begin}\n{render(data)}\n{end}"
    text = path.read_text() if path.exists() else "# Models\n\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)

"""The benchmark's Markdown tables: per model, per fault kind (with the check that caught it) and
the benign corpus as a kind x model grid."""

from __future__ import annotations


def summary(results: list[dict]) -> list[str]:
    """Localization counts only faults with a module truth; a whole-graph fault (an EP option) is counted
    apart, as caught on its provider or not: it has no first module to be found at."""
    out = ["| model | faults detected | at the first module (strict, faults with a module) | whole-graph faults on "
           "their provider | hint at the layer | default path = --full | benign changes | false positives | s/check |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        s = r["summary"]
        whole = f"{s['whole_graph_on_provider']}/{s['whole_graph']}" if s.get("whole_graph") else "—"
        out.append(f"| {s['model']} | {s['detected']}/{s['injected']} | {s['localized']}/{s['module_detected']} of "
                   f"{s['module_faults']} | {whole} | "
                   f"{s['hints_ok']}/{s['injected']} | {s.get('default_like_full', 0)}/{s.get('checked_both', 0)} | "
                   f"{s['benign']} | {s['false_positives']}/{s['benign']} | {s['seconds_per_check']:.1f} |")
    return out


def both_paths(results: list[dict]) -> list[str]:
    """Graph-side faults on the default path (stages from their keys) against --full."""
    out = ["| model | fault | touched | truth (by value) | default path: first regression | --full: first regression "
           "| same | localized | stages reused |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        for row in (x for x in r["rows"] if "agree" in x):
            out.append(f"| {r['summary']['model']} | {row['kind']} | `{row['injected']}` | `{row['truth']}` | "
                       f"`{row['first_layer'] or '-'}` on {row['first_provider'] or '-'} | "
                       f"`{row['full_first_layer'] or '-'}` on {row['full_first_provider'] or '-'} | "
                       f"{_yes(row['agree'])} | {_yes(row['localized'])} | {', '.join(row['reused']) or 'none'} |")
    return out


def faults(results: list[dict]) -> list[str]:
    out = ["| model | fault | side | injected at | first regression | caught by | localized | hint |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        for row in (x for x in r["rows"] if x["group"] != "benign"):
            if row.get("crashed"):
                out.append(f"| {r['summary']['model']} | {row['kind']} | {row['group']} | | error: {row['error'][:80]} | | | |")
                continue
            caught = f"{row['first_provider']} `{row['check']}`" if row["detected"] else "missed"
            where = (f"no module (on its provider: {_yes(row['localized'])})" if row["truth"] == "*"
                     else _yes(row["localized"]))
            out.append(f"| {r['summary']['model']} | {row['kind']} | {row['group']} | `{row['truth']}` | "
                       f"`{row['first_layer'] or '-'}` | {caught} | {where} | {_yes(row['hint_ok'])} |")
    return out


def benign(results: list[dict]) -> list[str]:
    kinds: list[str] = []
    for r in results:
        kinds += [x["kind"] for x in r["rows"] if x["group"] == "benign" and x["kind"] not in kinds]
    models = [r["summary"]["model"] for r in results]
    out = ["| change | " + " | ".join(models) + " |", "| --- |" + " --- |" * len(models)]
    for kind in kinds:
        cells = []
        for r in results:
            row = next((x for x in r["rows"] if x["kind"] == kind and x["group"] == "benign"), None)
            if row is None or not row.get("applicable", True):
                cells.append("n/a")
            elif row.get("crashed") or row.get("false_positive"):
                cells.append(f"**FAIL** {row.get('check') or row.get('error', '')[:40]}")
            else:
                cells.append("pass" + (" (structure noted)" if row.get("structure") else ""))
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    return out


def _yes(v) -> str:
    return "yes" if v else "**no**"

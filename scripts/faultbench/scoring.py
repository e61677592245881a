"""Strict scoring of one check's report against what was injected.

- detected: the verdict is ``regressed``.
- localized: the first regression's layer belongs to the first module the fault changes (``truth``:
  that module, one of its calls ``q#k`` or one of its output elements ``q[i]``; a child does not
  count). A whole-graph runtime fault has no single module: it is localized when the first
  regression is on the provider it was injected into and no PyTorch provider regressed.
- hint ok: a hint of the expected kind (and cause) names a layer of that same module.
- caught by: the provider and check of the first regression.
- false positive: a behaviour-preserving change whose verdict is not ``pass``.
"""

from __future__ import annotations

import re

WHOLE_GRAPH = "*"


def module_of(layer: str | None) -> str:
    """``layer2.0.relu#1`` and ``m[0][boxes]`` -> the module's qualified name."""
    return re.split(r"[#\[]", layer or "", maxsplit=1)[0]


def localized(report: dict, truth: str | None, provider: str | None = None) -> bool:
    first = report.get("first_regression") or {}
    if truth == WHOLE_GRAPH:
        torch_moved = any(p.get("name", "").startswith("torch") and p.get("status") == "regressed"
                          for m in report["models"] for p in m.get("providers", []))
        return first.get("provider") == provider and not torch_moved
    return bool(truth) and module_of(first.get("layer")) == truth


def hint_ok(report_model: dict, expected: tuple[str, str | None], truth: str | None) -> dict | None:
    kind, cause = expected
    for h in report_model.get("hints", []):
        if h["kind"] != kind or (cause is not None and h.get("evidence", {}).get("cause") != cause):
            continue
        if truth == WHOLE_GRAPH or module_of(h.get("layer")) == truth:
            return h
    return None


def structure_notes(report_model: dict) -> list[str]:
    """What the report says changed in the model's structure (renames, new and gone layers)."""
    audits = list(report_model.get("audits", []))
    for p in report_model.get("providers", []):
        audits += p.get("audits", [])
    return sorted({a["message"] for a in audits if a.get("check") == "structure"})


def score_fault(report: dict, injected: str, truth: str | None, expected: tuple[str, str | None],
                provider: str | None = None) -> dict:
    first = report.get("first_regression") or {}
    model = report["models"][0]
    hint = hint_ok(model, expected, truth)
    return dict(injected=injected, truth=truth, verdict=report["verdict"], first_layer=first.get("layer"),
                first_provider=first.get("provider"), check=first.get("check"), value=first.get("value"),
                detected=report["verdict"] == "regressed", localized=localized(report, truth, provider),
                hint_ok=hint is not None, hint_message=(hint or {}).get("message"),
                expected_hint=expected[0] + (f"/{expected[1]}" if expected[1] else ""),
                hints=sorted({f"{h['kind']}@{h.get('layer')}" for h in model.get("hints", [])}),
                error=(model.get("error") or {}).get("message"))


def score_benign(report: dict) -> dict:
    first = report.get("first_regression") or {}
    model = report["models"][0]
    return dict(verdict=report["verdict"], first_layer=first.get("layer"), first_provider=first.get("provider"),
                check=first.get("check"), value=first.get("value"), false_positive=report["verdict"] != "pass",
                structure=structure_notes(model), error=(model.get("error") or {}).get("message"))


def summarize(model: str, rows: list[dict], baseline_seconds: float) -> dict:
    """One model's counts. Localization is counted over the faults with a module truth only; a
    whole-graph fault (an EP option: ``*``) is counted apart, as caught on its provider or not. Seconds
    per check are over the rows that ran (a fault checked twice counts both checks)."""
    faults = [r for r in rows if r["group"] != "benign"]
    benign = [r for r in rows if r["group"] == "benign" and r.get("applicable", True)]
    detected = [r for r in faults if r.get("detected")]
    with_module = [r for r in faults if r.get("truth") not in (None, WHOLE_GRAPH)]
    whole = [r for r in faults if r.get("truth") == WHOLE_GRAPH]
    ran = [r for r in rows if "seconds" in r and not r.get("crashed")]
    checks = sum(2 if "full_seconds" in r else 1 for r in ran)
    return dict(model=model, injected=len(faults), detected=len(detected), module_faults=len(with_module),
                module_detected=sum(bool(r.get("detected")) for r in with_module),
                localized=sum(bool(r.get("detected") and r.get("localized")) for r in with_module),
                whole_graph=len(whole), whole_graph_on_provider=sum(bool(r.get("localized")) for r in whole),
                hints_ok=sum(bool(r.get("hint_ok")) for r in faults), benign=len(benign),
                false_positives=sum(bool(r.get("false_positive") or r.get("crashed")) for r in benign),
                seconds_per_check=sum(r["seconds"] + r.get("full_seconds", 0.0) for r in ran) / max(checks, 1),
                default_like_full=sum(bool(r.get("agree")) for r in faults),
                checked_both=sum("agree" in r for r in faults), baseline_seconds=baseline_seconds)

"""Read what a row needs from the gate's JSON report (``parity-gate/report``): the layers each
provider checked, and the gate's own message for a row that did not pass, shortened to one line."""

from __future__ import annotations

MAX_REASON = 200


def shorten(text: str, limit: int = MAX_REASON) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _label(provider: dict) -> str:
    return f"{provider['name']} {provider['precision']}"


def provider_counts(report: dict) -> dict[str, dict]:
    """Per provider (``torch-cpu float64``, ``CPUExecutionProvider float32``, ...): layers checked,
    folded, absent, and the provider's status."""
    out: dict[str, dict] = {}
    for model in report.get("models", []):
        for p in model.get("providers") or []:
            layers = p.get("layers") or []
            out[_label(p)] = {"checked": p.get("checked"), "folded": p.get("folded"),
                              "absent": sum(r.get("status") == "absent" for r in layers),
                              "status": p.get("status"), "error_status": p.get("error_status")}
    return out


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else str(value)


def _regression(report: dict) -> str:
    first = report["first_regression"]
    message = None
    for model in report.get("models", []):
        for p in model.get("providers") or []:
            if p["name"] != first["provider"]:
                continue
            for row in p.get("layers") or []:
                if row["layer"] == first["layer"] and row.get("check") == first["check"] and row.get("message"):
                    message = row["message"]
    detail = message or f"{_number(first['value'])} > {_number(first['threshold'])}"
    return f"{first['provider']}: `{first['layer']}` ({first['check']}): {detail}"


def _error_text(error) -> str:
    if isinstance(error, dict):
        status, message = error.get("status"), error.get("message") or error.get("error")
        return f"{status}: {message}" if status else str(message)
    return str(error)


def gate_message(report: dict | None) -> str:
    """The first thing the gate says went wrong: a model error, a provider that could not run, or the
    first regression with its check and the layer's own message."""
    if not report:
        return "no report"
    for model in report.get("models", []):
        if model.get("error"):
            return _error_text(model["error"])
    for model in report.get("models", []):
        for p in model.get("providers") or []:
            if p.get("error_status"):
                return f"{_label(p)}: {p['error_status']}: {p.get('reason') or ''}".rstrip(": ")
    if report.get("first_regression"):
        return _regression(report)
    for model in report.get("models", []):
        if model.get("status") not in ("pass", None):
            return f"{model['status']}: {model.get('message') or ''}"
    return report.get("verdict", "")

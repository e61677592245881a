"""The report as JUnit XML (``--junit FILE``), which most CI systems read: one ``testcase`` per model and
provider, plus ``(model)`` for a failure that belongs to no provider; the failure names the first layer,
its check and the model's next step. The XML writer escapes names and messages.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from gate.core.status import ModelStatus, Role, TargetStatus
from gate.render.next_steps import TEXT, step_words
from gate.render.text import over
from gate.verdict.rows import Regression
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

SUITE = "parity-gate"


def render_junit(report: Report) -> str:
    suite = ET.Element("testsuite", name=SUITE)
    suite.extend(case for m in report.models for case in _cases(m))
    counts = {k: sum(1 for c in suite if c.find(k) is not None) for k in ("failure", "error", "skipped")}
    totals = {"tests": str(len(suite)), "failures": str(counts["failure"]), "errors": str(counts["error"]),
              "skipped": str(counts["skipped"])}
    suite.attrib.update(totals)
    root = ET.Element("testsuites", {"name": SUITE, **{k: v for k, v in totals.items() if k != "skipped"}})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cases(m: ModelVerdict) -> list[ET.Element]:
    step = step_words(m, TEXT)
    out = [_case(m, p, step) for p in m.providers]
    said = any(c.find("failure") is not None or c.find("error") is not None for c in out)
    if m.status != ModelStatus.PASS and not said:  # the model's own failure (its export, a comparison)
        case = ET.Element("testcase", classname=_xml(m.name), name="(model)")
        if m.status == ModelStatus.ERROR:
            status = m.error.error_status if m.error else "error"
            text = m.error.message if m.error else ""
            _child(case, "error", f"{status}: {_line(text)}", str(status), _detail(text, step))
        elif m.first_regression is not None:
            _child(case, "failure", _regression(m.first_regression), str(m.first_regression.check),
                   _detail(m.first_regression.message, step))
        else:
            _child(case, "failure", m.message or "no baseline", "no-baseline", _detail(m.message, step))
        out.append(case)
    return out


def _case(m: ModelVerdict, p: ProviderVerdict, step: str) -> ET.Element:
    role = " reference" if p.role == Role.REFERENCE else ""
    case = ET.Element("testcase", classname=_xml(m.name), name=_xml(f"{p.name} {p.precision}{role}"))
    if p.latency_ms is not None:
        case.set("time", f"{p.latency_ms / 1000:.6f}")  # one inference, as the report measured it
    if p.status == TargetStatus.REGRESSED:
        fr = p.first_regression
        message = _regression(fr) if fr is not None else "regressed"
        _child(case, "failure", message, str(fr.check) if fr else "regressed",
               _detail(fr.message if fr else None, step))
    elif p.status == TargetStatus.NO_BASELINE:
        _child(case, "failure", f"no baseline: {_line(p.reason or m.message or '')}".rstrip(": "), "no-baseline",
               _detail(None, step))
    elif p.status == TargetStatus.ERROR:
        status = p.error_status or "error"
        _child(case, "error", f"{status}: {_line(p.reason or '')}".rstrip(": "), str(status),
               _detail((p.where and f"at {p.where}") or None, step))
    elif p.status == TargetStatus.SKIPPED:
        _child(case, "skipped", _line(p.reason or "not run here"))
    return case


def _regression(r: Regression) -> str:
    return f"first regression at {r.where}: {r.check} {over(r.check, r.value, r.threshold)}"


def _detail(message: str | None, step: str) -> str:
    return "\n".join(x for x in (message, f"next: {step}" if step else "") if x)


# Characters XML 1.0 cannot hold at all (an exception's text may carry them): replaced, never written.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _line(text: str, cap: int = 300) -> str:
    first = " ".join((text or "").split())
    return first if len(first) <= cap else first[: cap - 1] + "…"


def _child(case: ET.Element, tag: str, message: str, kind: str = "", text: str = "") -> None:
    el = ET.SubElement(case, tag, message=_xml(message))
    if kind:
        el.set("type", _xml(kind))
    if text:
        el.text = _xml(text[:20_000])

"""Markdown for a JSON report: the PR comment and the job summary.

The comment must fit GitHub's 65,536 characters, so the renderer keeps the richest of a ladder of detail
levels that fits. Never dropped: the headline and the notices for errored models, missing baselines and
skipped providers (a shortened comment must not read as a pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.core.status import AUDITS, ModelStatus, Role, TargetStatus, Verdict
from gate.render.chart import error_chart
from gate.render.data_dependent_md import data_dependent_table
from gate.render.icons import icon
from gate.render.layers_md import layer_table
from gate.render.next_steps import next_steps
from gate.render.notices import MAX_LIST, baseline_block, failure, notices, reason
from gate.render.outputs_md import outputs_table
from gate.render.reuse_text import alarm_line, reuse_line, reuse_tally
from gate.render.sweeps_md import sweep_section
from gate.render.text import MESSAGE_CAP, attr, clip, code, link, num, over, plain, row, times
from gate.verdict.rows import Regression
from gate.verdict.sweeps import matrices
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

COMMENT_LIMIT = 65_536
# The job summary takes 1 MiB per step; 4 bytes per character at worst.
SUMMARY_LIMIT = 250_000
MAX_CHARTS = 3


@dataclass(frozen=True)
class Links:
    """Where the reader finds more: the workflow run that computed the report (its job summary) and
    the report artifact; and what was judged: the commit, the run's attempt, the job (matrix leg)."""

    run_url: str | None = None
    artifact_url: str | None = None
    commit: str | None = None
    commit_url: str | None = None
    run_label: str | None = None  # "run 4242, attempt 2"
    job: str | None = None  # "check on Linux X64"


@dataclass(frozen=True)
class _Level:
    rows: int | None  # layer rows per provider table; None = all
    details: bool
    charts: bool
    models: bool  # per-model sections (provider tables)


_LADDER = (
    _Level(None, True, True, True),
    _Level(200, True, True, True),
    _Level(50, True, True, True),
    _Level(10, True, True, True),
    _Level(0, False, True, True),
    _Level(0, False, False, True),
    _Level(0, False, False, False),
)
_BRIEF = 5  # the first level without per-layer tables and charts


def render_markdown(report: Report, *, marker: str = "", links: Links | None = None,
                    limit: int = COMMENT_LIMIT, summary: bool = False, brief: bool = False,
                    approval: str = "", changes: str = "", caution: str = "") -> str:
    """The whole Markdown document for ``report``, at most ``limit`` characters (UTF-16 units, see size()).
    ``summary``: for the job summary; ``brief``: start without per-layer tables and charts (the retry
    after GitHub refused a body); ``approval`` and ``changes``: lines for the baseline-change block;
    ``caution``: a block that leads, never dropped (the report claimed more than its rows show)."""
    links = links or Links()
    for level in _LADDER[_BRIEF:] if brief else _LADDER:
        text = _Doc(report, marker, links, level, shortened=level is not _LADDER[0], summary=summary,
                    approval=approval, changes=changes, caution=caution).render()
        if size(text) <= limit:
            return text
    # Pathological reports (thousands of models, errors in every one): headline + pointer, cut hard.
    doc = _Doc(report, marker, links, _LADDER[-1], shortened=True, summary=summary, approval=approval)
    tail = "\n\n" + doc.pointer() + "\n"
    head = "\n\n".join(p for p in (marker, caution, baseline_block(report, approval, changes), doc.headline()) if p)
    return clip_block(head, limit - size(tail)) + tail


def size(text: str) -> int:
    """Length as GitHub may count it: UTF-16 code units (an emoji outside the BMP counts twice)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def clip_block(text: str, cap: int) -> str:
    """Cut at a line end so that the text and an ellipsis line fit in ``cap``."""
    if size(text) <= cap:
        return text
    budget = max(0, cap - 2)  # "\n…"
    while size(text) > budget:
        cut = text.rfind("\n", 0, len(text) - 1)
        text = text[:cut] if cut > 0 else text[: max(0, len(text) - (size(text) - budget))]
    return text + "\n…"


def headline_text(report: Report) -> str:
    """One plain line for the verdict line: what failed, where, by how much; on a pass, the scope."""
    fr = report.first_regression
    if fr:
        return f"{fr.model}: layer {fr.where} on {fr.provider} failed {fr.check} ({over(fr.check, fr.value, fr.threshold)})"
    errors = [m for m in report.models if m.status == ModelStatus.ERROR]
    if errors:
        e = errors[0].error
        return (f"{errors[0].name}: {e.error_status}: {clip(e.message, 200)}" if e else f"{errors[0].name}: error")
    missing = [m for m in report.models if m.status == ModelStatus.NO_BASELINE]
    if missing:
        return f"{missing[0].name}: no baseline (create it with `{missing[0].recreate}`)"
    s = report.summary
    assert s is not None  # a Report always has one (__post_init__)
    return f"{s.models} model{'s' * (s.models != 1)}, {s.layers:,} layers"


class _Doc:
    def __init__(self, report: Report, marker: str, links: Links, level: _Level, shortened: bool, summary: bool,
                 approval: str = "", changes: str = "", caution: str = ""):
        self.r, self.marker, self.links, self.level, self.shortened = report, marker, links, level, shortened
        self.summary, self.approval, self.changes, self.caution = summary, approval, changes, caution
        self.models: list[ModelVerdict] = report.models
        self.rows_total, self.rows_shown = 0, 0
        self.charts_left = MAX_CHARTS

    def render(self) -> str:
        parts = [self.marker, self.caution, baseline_block(self.r, self.approval, self.changes), self.headline(),
                 self.judged(), notices(self.r), next_steps(self.r), self.overview()]
        if self.level.models:  # a passing case of a sweep is one row of its matrix, not a section
            parts += [self.model_section(m) for m in self.models if not m.sweep or m.status != ModelStatus.PASS]
        parts += [sweep_section(mx) for mx in matrices(self.models)]
        if self.shortened:
            parts.append(self.pointer())
        parts.append(self.footer())
        return "\n\n".join(p for p in parts if p) + "\n"

    def headline(self) -> str:
        s = self.r.summary
        assert s is not None  # a Report always has one (__post_init__)
        providers = s.providers or sorted({p.name for m in self.models for p in m.providers})
        scope = (f"{s.models} model{'s' * (s.models != 1)}, {s.layers:,} layers, {len(providers)} "
                 f"provider{'s' * (len(providers) != 1)}{reuse_tally(self.models)}")
        fr = self.r.first_regression
        errors = [m for m in self.models if m.status == ModelStatus.ERROR]
        if fr:
            return f"{_title(fr)}\n\n{_first_body(fr, _baseline_of(self.r, fr))}\n\n{scope}: {_tally(self.models)}."
        if self.r.verdict == Verdict.ERROR or errors:
            names = ", ".join(code(m.name) for m in errors[:MAX_LIST]) or "a model"
            return (f"### 💥 parity-gate: {len(errors) or 'a'} model{'s' * (len(errors) != 1)} failed: {names}"
                    f"\n\n{scope}: {_tally(self.models)}.")
        if self.r.verdict == Verdict.REGRESSED:
            missing = [m for m in self.models if m.status == ModelStatus.NO_BASELINE]
            entry = all(m.baseline_exists for m in missing)  # the file is there: a target's entry is not
            what = (f"no baseline {'entry ' * entry}for {', '.join(code(m.name) for m in missing[:MAX_LIST])}"
                    if missing else "regressed")
            return f"### ❌ parity-gate: {what}\n\n{scope}."
        unchecked = sum(1 for m in self.models for p in m.providers if p.status in (TargetStatus.SKIPPED, TargetStatus.ERROR))
        note = f" ({unchecked} provider run{'s' * (unchecked != 1)} not checked, see below)" if unchecked else ""
        return f"### ✅ parity-gate: passed{note}\n\n{scope}."

    def judged(self) -> str:
        """What this comment judged: the commit, the run that computed it, the job."""
        lk = self.links
        bits = ["commit " + link(code(lk.commit[:12]), lk.commit_url) if lk.commit else "",
                link(plain(lk.run_label, 80), lk.run_url) if lk.run_label else "",
                f"job {plain(lk.job, 120)}" if lk.job else ""]
        return "<sub>Judged: " + " · ".join(b for b in bits if b) + "</sub>" if any(bits) else ""

    def overview(self) -> str:
        rows = ["| model | status | layers | providers | first regression |", "| --- | --- | ---: | --- | --- |"]
        listed = [m for m in self.models if not m.sweep or m.status != ModelStatus.PASS]
        if not listed:
            return ""
        cap = len(listed) if self.level.models else 50
        for m in listed[:cap]:
            provs = " ".join(f"{icon(p.status)}&nbsp;{_provider_label(p, m)}" for p in m.providers
                             if p.status != TargetStatus.SKIPPED)  # a skipped provider is said once, in the notices
            rows.append(row(code(m.name), _status(m.status), num(m.layers), provs or "—",
                            _first(m.first_regression, _baseline_of(self.r, m.first_regression, m))))
        if len(listed) > cap:
            rows.append(f"| … {len(listed) - cap} more models | | | | |")
        return "\n".join(rows)

    def model_section(self, m: ModelVerdict) -> str:
        """The model's tables, collapsed: what a reviewer must read is above them (the headline, the
        next step, the overview's row)."""
        body = "\n\n".join(x for x in self.model_parts(m) if x)
        alarms = "\n".join(f"🚨 {code(m.name)}: **{plain(alarm_line(a), MESSAGE_CAP)}**"  # never collapsed
                           for a in (m.reuse.alarms[:5] if m.reuse is not None else []))
        summary = f"<b>{attr(m.name)}</b> · {icon(m.status)} {attr(m.status, 20)} · {m.layers:,} layers"
        section = f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"
        return f"{alarms}\n\n{section}" if alarms else section

    def model_parts(self, m: ModelVerdict) -> list[str]:
        out = [_model_meta(m)]
        if m.reuse is not None:
            out.append(f"♻️ {plain(reuse_line(m.reuse), MESSAGE_CAP)}")
        said = failure(m) is not None  # the notices say the model's error: here, a pointer to it
        if m.error:
            out.append(f"💥 **{plain(m.error.error_status, 20)}**: " + ("the model's error, above" if said else
                       plain(m.error.message, 2 * MESSAGE_CAP)
                       + (f" (at {code(m.error.where, 200)})" if m.error.where else "")))
        shown = [p for p in m.providers if p.status != TargetStatus.SKIPPED]
        if shown:
            out.append(_provider_table(shown, m if said else None))
        audits = m.audits + [a for p in m.providers for a in p.audits]
        if audits:
            out.append("\n".join(f"{'❌' if a.status == 'fail' else '⚠️'} {plain(a.check, 20)}: "
                                  f"{plain(a.message, MESSAGE_CAP)}" for a in audits[:10]))
        out.append(outputs_table(m.providers))
        out.append(data_dependent_table(m.providers))
        hints = [h for h in m.hints if h.kind != "hints-unavailable"]
        if hints and m.status in (ModelStatus.REGRESSED, ModelStatus.ERROR):
            out.append("**Diagnosis**\n\n" + "\n".join(
                f"- {code(h.kind)} at {code(h.layer or '—')}{(' on ' + code(h.provider)) if h.provider else ''}: "
                f"{plain(h.message, MESSAGE_CAP)}" for h in hints[:6]))
        if self.level.charts:
            out += [error_chart(m.name, p) or "" for p in m.providers if p.status == TargetStatus.REGRESSED and self._take_chart()]
        if self.level.details:
            first = self.r.first_regression
            out += [self.layer_details(m.name, p, first is not None and (first.model, first.provider) == (m.name, p.name)
                                       and first.precision in (None, p.precision)) for p in m.providers if p.rows]
        return out

    def _take_chart(self) -> bool:
        self.charts_left -= 1
        return self.charts_left >= 0

    def layer_details(self, model: str, p: ProviderVerdict, open_: bool) -> str:
        text, shown = layer_table(model, p, self.level.rows, open_)
        self.rows_total += len(p.rows)
        self.rows_shown += shown
        return text

    def pointer(self) -> str:
        places = [] if self.summary else [link("job summary", self.links.run_url)]
        places.append(link("report artifact", self.links.artifact_url))
        what = "job summary is shortened to fit GitHub's 1 MiB" if self.summary else \
            "comment is shortened to fit GitHub's 65,536-character"
        shown = f" ({self.rows_shown:,} of {self.rows_total:,} layer rows shown)" if self.rows_total else ""
        return f"> ✂️ This {what} limit{shown}. The full report is in the {' and the '.join(places)}."

    def footer(self) -> str:
        env = self.r.environment
        bits = [link("workflow run", self.links.run_url) if self.links.run_url else "",
                link("report artifact", self.links.artifact_url) if self.links.artifact_url else ""]
        for key, label in (("parity_gate", "parity-gate"), ("torch", "torch"), ("onnxruntime", "onnxruntime"),
                           ("onnx", "onnx"), ("python", "python"), ("platform", ""), ("backend", "fingerprint")):
            if env.get(key):
                bits.append(f"{label} {plain(env[key], 60)}".strip())
        return "<sub>" + " · ".join(b for b in bits if b) + "</sub>" if any(bits) else ""


def _fused(fr: Regression) -> str:
    """What the regressed value also computes on its runtime (layers folded into it)."""
    return f" (with {', '.join(code(x) for x in fr.fused[:4])}, folded into it)" if fr.fused else ""


def _title(fr: Regression) -> str:
    precision = f" ({plain(fr.precision, 20)})" if fr.precision else ""
    if fr.check in AUDITS:  # of the whole target: no layer's value failed
        return f"### ❌ parity-gate: {code(fr.model)} failed its {plain(fr.check, 40)} audit on {code(fr.provider)}{precision}"
    return (f"### ❌ parity-gate: {code(fr.model)} regressed at layer {code(fr.layer)}{_fused(fr)} "
            f"on {code(fr.provider)}{precision}")


def _first_body(fr: Regression, baseline: float | None) -> str:
    ratio = times(fr.value, baseline)
    aside = f" ({ratio} the baseline {num(baseline)})" if ratio else ""
    what = (f"audit **{plain(fr.check, 40)}** failed." if fr.check in AUDITS else
            f"check **{plain(fr.check, 40)}**: {over(fr.check, fr.value, fr.threshold, lambda v: f'**{num(v)}**', aside)}.")
    body = (f"**First regression:** model {code(fr.model)}, layer {code(fr.layer)}"
            f"{' (' + code(fr.type) + ')' if fr.type else ''}{_fused(fr)}, provider {code(fr.provider)}"
            f"{' (' + plain(fr.precision, 20) + ')' if fr.precision else ''}: {what}")
    return body + (f"\n> {plain(fr.message)}" if fr.message else "")


def _baseline_of(report: Report, fr: Regression | None, model: ModelVerdict | None = None) -> float | None:
    """The baseline value of the row a first regression names (what "≈ N× the baseline" divides by)."""
    if fr is None:
        return None
    model = model or next((m for m in report.models if m.name == fr.model), None)
    for p in model.providers if model else []:
        if p.name == fr.provider and fr.precision in (None, p.precision):
            return _row_baseline(p, fr)
    return None


def _row_baseline(p: ProviderVerdict, fr: Regression | None) -> float | None:
    """Of an error only: NaN/Inf counts are no multiples of each other."""
    row = next((r for r in p.rows if fr and r.layer == fr.layer and r.check == fr.check), None)
    return row.baseline if row and row.error is not None else None


def _tally(models: list[ModelVerdict]) -> str:
    """What did not pass, counted by kind: a missing baseline is not a regression."""
    refused = [m.status == ModelStatus.ERROR and m.refused for m in models]
    counts = [(sum(m.status == ModelStatus.REGRESSED for m in models), "regressed"),
              (sum(m.status == ModelStatus.NO_BASELINE for m in models), "without a baseline"),
              (sum(refused), "with a baseline that cannot judge it"),
              (sum(m.status == ModelStatus.ERROR for m in models) - sum(refused), "failed to run")]
    said = [f"{n} {what}" for n, what in counts if n]
    return ", ".join(said) or "all passed"


def _model_meta(m: ModelVerdict) -> str:
    meta = [f"exporter {plain(m.exporter, 40)}" if m.exporter else "", f"opset {m.opset}" if m.opset else "",
            f"reference cpu/{plain(m.reference_dtype, 20)}", plain(promotion_text(m), 120), plain(mapping_text(m), 120),
            f"baseline {code(m.baseline_path)}" if m.baseline_path else ""]
    return " · ".join(x for x in meta if x)


def mapping_text(m: ModelVerdict) -> str:
    """"16 of 22 layers have a value in the shipped graph (5 folded, 1 absent)", or nothing."""
    mp = m.mapping
    return (f"{mp.mapped} of {mp.layers} layers have a value in the shipped graph "
            f"({mp.folded} folded, {mp.absent} absent)") if mp else ""


def promotion_text(m: ModelVerdict) -> str:
    """"12 casts promoted to float64 in 6 layers", or nothing."""
    n = sum(m.promoted.values())
    return (f"{n} cast{'s' * (n != 1)} to a lower precision promoted to float64 in {len(m.promoted)} "
            f"layer{'s' * (len(m.promoted) != 1)}") if n else ""


def _provider_table(providers: list[ProviderVerdict], said: ModelVerdict | None = None) -> str:
    """``said``: the model whose error the notices say; its reference's reason is that error (``judge``)."""
    head = ["| provider | role | precision | device | status | checked | failed | folded | latency | first regression |",
            "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    return "\n".join(head + [
        row(code(p.name), plain(p.role, 20), plain(p.precision, 20), plain(p.label, 40),
            f"{_status(p.status)}{(' — ' + _reason(p, said)) if p.reason else ''}", num(p.checked),
            num(p.failed), num(p.folded), num(p.latency_ms) + " ms" if p.latency_ms is not None else "—",
            _first(p.first_regression, _row_baseline(p, p.first_regression)))
        for p in providers])


def _reason(p: ProviderVerdict, said: ModelVerdict | None) -> str:
    ours = said is not None and p.role == Role.REFERENCE and p.status == TargetStatus.ERROR
    return "the model's error, above" if ours else plain(reason(p), 200)


def _provider_label(p: ProviderVerdict, m: ModelVerdict) -> str:
    """The provider's name, with its precision when the model runs that provider twice (torch-cpu float64/float32)."""
    twice = sum(1 for q in m.providers if q.name == p.name) > 1
    return code(p.name, 60) + (f"&nbsp;{plain(p.precision, 20)}" if twice and p.precision else "")


def _status(status: str | None) -> str:
    return f"{icon(status)} {plain(status or 'unknown', 20)}"


def _first(fr: Regression | None, baseline: float | None = None) -> str:
    if not fr:
        return "—"
    provider = f" on {code(fr.provider, 60)}" if fr.provider else ""
    ratio = times(fr.value, baseline)
    where = code(fr.layer) + ("" if fr.check in AUDITS else _fused(fr))
    return (f"{where}{provider}: {plain(fr.check, 40)} "
            f"{over(fr.check, fr.value, fr.threshold, aside=f' ({ratio} the baseline)' if ratio else '')}")


__all__ = ["size", "COMMENT_LIMIT", "SUMMARY_LIMIT", "MESSAGE_CAP", "Links", "render_markdown", "headline_text"]

"""The comment's notices: everything that is not a plain pass, one bullet each, and the block that
leads a comment when the pull request rewrites baselines. A shortened comment keeps all of them,
so it can never read as a pass."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from gate.core.status import ModelStatus, Role, SkipKind, TargetStatus
from gate.render.next_steps import MARKDOWN, listed, loosened_lines, unchecked_words
from gate.render.text import code, plain, visible
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

MAX_LIST = 20
SUFFIX = ".msgpack.zst"


def reason(p: ProviderVerdict) -> str:
    """The provider's reason without a repeated "skipped: " / "error: " prefix."""
    text = visible(str(p.reason or p.status or ""))
    prefix = f"{p.status}:"
    return text[len(prefix):].strip() if text.startswith(prefix) else text


def changed_models(report: Report) -> list[tuple[str, str]]:
    """(model or file stem, file) for each baseline file the pull request changes."""
    return [(PurePosixPath(path).name.removesuffix(SUFFIX), path) for path in report.baseline_changes or []]


def baseline_block(report: Report, approval: str = "", changes: str = "") -> str:
    """The block that leads the comment of a pull request that rewrites baselines: which models,
    and that they were judged against the rewritten files (so a pass does not compare with the base);
    ``changes``, what else it changes that decides its verdict; ``approval``, whether it may merge."""
    listed = {path for _, path in changed_models(report)}
    dropped = report.baseline_dropped or []
    gone = [(model, path) for model, path in changed_models(report) if path in dropped]
    changed = [c for c in changed_models(report) if c not in gone]  # the rest: read as what moved in them
    if not listed and not changes:
        return ""
    lines = ["> [!IMPORTANT]"]
    if gone:
        shown = ", ".join(f"{code(model)} ({code(path)})" for model, path in gone[:MAX_LIST])
        more = f" and {len(gone) - MAX_LIST} more" if len(gone) > MAX_LIST else ""
        s = "s" * (len(gone) != 1)
        lines.append(f"> **This pull request deletes the baseline{s} of** {shown}{more}, which the config no "
                     "longer checks.")
    if changed:
        shown = ", ".join(f"{code(model)} ({code(path)})" for model, path in changed[:MAX_LIST])
        more = f" and {len(changed) - MAX_LIST} more" if len(changed) > MAX_LIST else ""
        lines.append(f"> **This pull request changes baselines:** {shown}{more}.")
        # names as shown: a report is untrusted text
        held = {PurePosixPath(visible(m.baseline_path or "")).name for m in report.models
                if m.status in (ModelStatus.PASS, ModelStatus.REGRESSED)}
        judged = [model for model, path in changed if PurePosixPath(visible(path)).name in held]  # none of a deleted file
        who = "These models" if len(judged) == len(changed) else ", ".join(code(m) for m in judged[:MAX_LIST])
        if judged:
            lines.append(f"> {who} {'was' if len(judged) == 1 and who != 'These models' else 'were'} judged "
                         "against the baselines this pull request writes, not against those of the base branch: "
                         "review what moved with `git diff` (with the `parity-gate show --textconv` driver, one "
                         "line per layer).")
    loosened = [path for path in report.baseline_loosened or [] if path in listed]  # the PR's own list alone
    if loosened:
        files = ", ".join(code(p, 200) for p in loosened[:MAX_LIST])
        lines.append(f"> ⚠️ **Limits loosened** in {files}: its checks now pass by more than before (a "
                     "calibrated noise grown, a precision coarsened, a recorded latency raised). Review the "
                     "rewrite as a change of what passes.")
    lines += [f"> {line}" for line in (changes, approval) if line]
    return "\n".join(lines) + _diffs(report, [path for _, path in changed])

DIFF_LINES = 80  # per file, and
DIFF_CHARS = 12_000  # all files, shared equally (one file never hides another): the block is never shortened


def _diffs(report: Report, paths: list[str]) -> str:
    """What moved in each changed baseline file, as the run described them (``commands.baseline_diff``): only
    files the pull request's own list names (``baseline_changes``; the report may come from a fork)."""
    shown, share = [], DIFF_CHARS // max(len(paths), 1)
    for path in paths:
        text = (report.baseline_diffs or {}).get(path)
        if not text:
            continue
        lines = text.splitlines()
        body = "\n".join(lines[:DIFF_LINES] + ([f"… {len(lines) - DIFF_LINES} more lines"] if len(lines) > DIFF_LINES
                                                else []))
        body = body if len(body) <= share else f"{body[:share]}\n… cut"
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
        shown.append(f"{code(path, 200)}:\n\n{fence}diff\n{body}\n{fence}")  # each file named, as git diff does
    if not shown:
        return ""
    return ("\n\n<details><summary>What moved in the baseline files (what moved first, then each layer that "
            "moved beyond noise, as <code>parity-gate show</code> prints it)</summary>\n\n"
            + "\n\n".join(shown) + "\n\n</details>")


def failure(m: ModelVerdict) -> str | None:
    """What a failed model's line says after its name: models sharing these words (a sweep's cases, one
    baseline file) share one line."""
    if m.status != ModelStatus.ERROR or not m.error:
        return None
    at = f" (at {code(m.error.where, 200)})" if m.error.where else ""
    return f"**{plain(m.error.error_status, 20)}**: {plain(m.error.message)}{at}{_unchecked(m)}"


def model_notices(m: ModelVerdict) -> list[str]:
    """Notices of one model but its failure (``failure``)."""
    items = []
    if m.status == ModelStatus.NO_BASELINE and not m.baseline_exists:
        where = f" at {code(m.baseline_path)}" if m.baseline_path else ""
        items.append(f"🆕 {code(m.name)} has no baseline{where}.")
    if m.reference_dtype == "float32":
        items.append(f"ℹ️ {code(m.name)}: float32 reference (the model could not run in float64).")
    if m.below_float64:
        first, dtype = next(iter(m.below_float64.items()))
        n = len(m.below_float64)
        items.append(f"⚠️ {code(m.name)}: the reference computed below float64 in {n} layer{'s' * (n != 1)} (first "
                     f"{code(first)}: {plain(dtype, 20)}; a custom op, a NumPy round trip, or a cast "
                     "`reference-promotion = false` keeps): from there its limits follow that precision.")
    if m.export_fallback:
        items.append(f"ℹ️ {code(m.name)}: exported by TorchScript ({plain(m.export_fallback, 200)}): a trace "
                     "keeps only the branches its inputs took.")
    for name, v in list(m.versions.items())[:4]:
        items.append(f"ℹ️ {code(m.name)} ran with {plain(name, 20)} {plain(v.run, 40)}; its baseline was "
                     f"recorded with {plain(v.baseline, 40)}.")
    for p in m.providers:
        if p.status == TargetStatus.SKIPPED and p.skip == SkipKind.SWEEP:
            continue  # listed with its reason in the sweep's matrix
        if p.status == TargetStatus.SKIPPED:
            items.append(f"⏭️ {code(m.name)} · {code(p.name)} not checked: {plain(reason(p))}")
        elif p in m.not_checked:
            if not (m.status == ModelStatus.ERROR and m.error):  # else the model's line lists it (_unchecked)
                items.append(f"⛔ {code(m.name)} · {code(p.name)} not checked "
                             f"(**{plain(p.error_status, 20)}**): there is no ONNX graph to run")
        elif p.status == TargetStatus.ERROR and not (m.error and p.role == Role.REFERENCE):  # said above
            items.append(f"💥 {code(m.name)} · {code(p.name)} failed"
                         f"{' (' + plain(p.error_status, 20) + ')' if p.error_status else ''}: {plain(reason(p))}"
                         + (f" (at {code(p.where, 200)})" if p.where else ""))
        elif p.status == TargetStatus.NO_BASELINE and m.baseline_exists:
            items.append(f"🆕 {code(m.name)} · {code(p.name)} has no baseline entry for {plain(p.label, 60)}.")
    return items


def _target(p: ProviderVerdict) -> str:
    return f"{code(p.name)} {plain(p.precision, 20)}"


def _unchecked(m: ModelVerdict) -> str:
    """Which rows a failed export left unchecked, and which were judged all the same."""
    if not m.not_checked:
        return ""
    judged = f"; checked against the baseline all the same: {', '.join(map(_target, m.judged))}" if m.judged else ""
    return f". Not checked: {', '.join(map(_target, m.not_checked))} (no ONNX graph){judged}."


def notices(report: Report) -> str:
    items = [f"⚠️ {unchecked_words(report, MARKDOWN)}"] if report.unchecked else []
    items += [f"⚠️ {line}" for line in loosened_lines(report, MARKDOWN)]
    if report.unowned:
        one = len(report.unowned) == 1
        files = ", ".join(code(p, 200) for p in report.unowned[:MAX_LIST])
        what, them = ("this baseline", "it") if one else ("these baselines", "them")
        items.append(f"⚠️ {files}: no model in the config owns {what}, so nothing checks {them}; restore its "
                     f"model's table (or sweep), or delete the file{'' if one else 's'}.")
    failed: dict[str, list[str]] = {}
    for m in report.models:
        said = failure(m)
        if said is not None:
            failed.setdefault(said, []).append(m.name)
    items += [f"💥 {listed(names, MARKDOWN)} failed: {said}" for said, names in failed.items()]
    items += [item for m in report.models for item in model_notices(m)]
    if len(items) > 2 * MAX_LIST:
        items = items[: 2 * MAX_LIST] + [f"… and {len(items) - 2 * MAX_LIST} more notices (see the job summary)."]
    return "\n".join(f"- {i}" for i in items)

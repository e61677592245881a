"""One line of next steps per model that did not pass (or passed with a refactor inside a module), worded
for its cause (``gate.verdict.next_step`` decides which). The same words serve Markdown (``MARKDOWN``)
and plain text (``TEXT``: the console, JUnit), so the console's next step is the comment's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gate.core.status import AUDITS, Check, ErrorStatus, StepKind, TargetStatus
from gate.render.text import MESSAGE_CAP, clip, code, over, plain
from gate.verdict.causes import later
from gate.verdict.next_step import RECORDS, NextStep, next_step
from gate.verdict.rows import Regression
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report

MAX_MODELS = 20
_MODEL_ERRORS: dict[ErrorStatus | None, str] = {
    ErrorStatus.BUILD_FAIL: "it failed to build (its factory, inputs or their files)",
    ErrorStatus.EXPORT_FAIL: "it failed to export to ONNX",
    ErrorStatus.EMPTY: "it has nothing to check",
    ErrorStatus.NO_RESULT: "no result file holds it: its export or collect job did not run, failed or "
                           "uploaded nothing",
}


@dataclass(frozen=True)
class Style:
    """How the words are written: ``code`` for commands and names, ``plain`` for prose from a report,
    ``strong`` for emphasis; ``tables``: where the per-layer rows are, seen from the step; ``hints``: where
    its hints are."""

    code: Callable[..., str]
    plain: Callable[..., str]
    strong: Callable[[str], str]
    tables: str
    hints: str


MARKDOWN = Style(code, plain, lambda s: f"**{s}**", "compare the layer tables below",
                 "the hints under **Diagnosis**")
TEXT = Style(code, lambda s, cap=MESSAGE_CAP: clip(s, cap), lambda s: s,
             "compare the layer rows of the report", "its `hint` lines")


def next_steps(report: Report) -> str:
    """One line per step (``step_groups``)."""
    lines = [f"- {listed(names, MARKDOWN)}: {words}" for names, words in step_groups(report.models)]
    if not lines:
        return ""
    if len(lines) > MAX_MODELS:
        lines = lines[:MAX_MODELS] + [f"- … and {len(lines) - MAX_MODELS} more models (see the job summary)."]
    return "**Next steps**\n\n" + "\n".join(lines)


def step_groups(models: list[ModelVerdict], style: Style = MARKDOWN) -> list[tuple[list[str], str]]:
    """Each step once, with the models it is for: a sweep's cases whose steps record them of one kind share
    one (in the first case's words, its command naming each of them), as do models whose steps read the
    same."""
    cases: dict[str, list[ModelVerdict]] = {}
    plain: list[tuple[ModelVerdict, NextStep]] = []
    for m in models:
        step = next_step(m)
        if step is not None and m.sweep and step.kind in RECORDS:
            cases.setdefault(f"{m.sweep}\0{step.kind}", []).append(m)
        elif step is not None:
            plain.append((m, step))
    groups: dict[str, tuple[list[str], str]] = {}
    for m, step in plain:
        groups.setdefault(_WORDS[step.kind](m, step, style), ([], ""))[0].append(m.name)
    lines = [(names, words) for words, (names, _) in groups.items()]
    for group in cases.values():
        first, step = group[0], next_step(group[0])
        assert step is not None
        whole = len(group) == sum(m.sweep == first.sweep for m in models)
        words = _WORDS[step.kind](first, _of_cases(group, step, whole), style)
        lines.append(([m.name for m in group], words))
    order = {m.name: i for i, m in enumerate(models)}
    return sorted(lines, key=lambda line: order[line[0][0]])


def step_words(m: ModelVerdict, style: Style = MARKDOWN) -> str:
    """The model's next step as a sentence ("" for a model that passed)."""
    step = next_step(m)
    return "" if step is None else _WORDS[step.kind](m, _of_cases([m], step) if m.sweep else step, style)


def _of_cases(cases: list[ModelVerdict], step: NextStep, whole: bool = False) -> NextStep:
    """The re-record of a sweep's cases names each of them (a readable set file keeps the cases not named),
    or the sweep where they are all its cases this check judged. A file that cannot judge them (stale) is
    recorded anew for the whole sweep: no case of it can be kept."""
    first = cases[0]
    if step.command != first.recreate:
        return step
    named = (f"--model {first.sweep}" if whole or step.kind == StepKind.STALE_BASELINE
             else " ".join(f"--model {m.name}" for m in cases))
    return replace(step, command=first.recreate.replace(f"--model {first.name}", named))


def _commit(m: ModelVerdict, s: Style) -> str:
    return f" and commit {s.code(m.baseline_path)}" if m.baseline_path else " and commit the baseline file"


def _model_changed(m: ModelVerdict, step: NextStep, s: Style) -> str:
    where = f" first at {s.code(step.layer)}{later(step.causes, s.code)}" if step.layer else ""
    outputs = step.ahead.outputs_words(s.code)  # what ships changed too
    if step.kind == StepKind.WEIGHTS_CHANGED:
        record = f"{s.code(step.command, 260)}{_commit(m, s)}"
        said = (f"and its code runs the same operations (its float64 reference moved{where})"
                if Check.WEIGHTS_UNSEEN not in step.checks else
                "but no layer moved on the configured inputs: widen them to reach what changed")
        return (f"the model's weights changed {said}{outputs}. If the new weights are intended, run {record}; if "
                "not, find what wrote them.")
    said = (f": its own casts to a lower precision changed{where} (its float64 reference promotes them; what "
            "ships computes at another precision)" if Check.CASTS in step.checks else
            f": its outputs are in another order, {s.code(step.layer or '(model)')} first (a caller that reads the "
            "exported graph's outputs by position gets another one)" if Check.OUTPUT_ORDER in step.checks else
            f" (its float64 reference moved{where})" if not step.ahead or step.layer is None else
            f": {step.ahead.words(step.layer, s.code)}" if step.ahead.output else
            f": {step.ahead.words(step.layer, s.code)}, where its float64 reference moved first")
    record = f"{s.code(step.command, 260)}{_commit(m, s)}"
    return f"the model changed{said}{outputs}. If that is intended, run {record}."


def _degenerate(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return (f"its outputs carry no information on the configured inputs (every element zero, NaN/Inf, or "
            f"none at all: see {s.code(step.layer or '(model)')}): check the weights its factory loads and "
            "its inputs (a zero-size dimension, a range that zeroes them). Re-recording cannot fix it: no "
            "baseline passes such a model.")


def _random_draws(m: ModelVerdict, step: NextStep, s: Style) -> str:
    eval_, no_training = s.code("model.eval()"), s.code("training=False")
    return (f"the forward draws random numbers (the {s.code('random-draws')} audit names the call): pass "
            f"{no_training} to functional dropout, call {eval_}, or draw from a seeded generator. "
            "Re-recording cannot fix it: the next run draws again.")


def _training_mode(m: ModelVerdict, step: NextStep, s: Style) -> str:
    where = f" from {s.code(step.layer)}" if step.layer else ""
    return (f"the factory returns modules in training mode that change the outputs{where}: call "
            f"{s.code('model.eval()')} in the factory, or fix those modules, then check again.")


def _dynamic_shape(m: ModelVerdict, step: NextStep, s: Style) -> str:
    audit, key = s.code("dynamic-shape"), s.code("dynamic-shapes")
    return (f"its exported graph keeps static an input dimension that should be dynamic (the {audit} audit "
            f"names it): declare it in {key}, or fix what specializes it; if static is intended, re-record "
            f"with {s.code(step.command, 260)}{_commit(m, s)}.")


def _layer_tolerances(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return (f"a {s.code('layer-tolerances')} rule matches no layer (the audit names its key): fix its "
            f"glob ({s.code('parity-gate show')} on the baseline lists the layers) or delete it, then check "
            "again.")


def _names(step: NextStep, s: Style) -> str:
    return ", ".join(s.code(n) for n in step.providers[:4]) or "a provider"


def _runtime_audit(m: ModelVerdict, step: NextStep, s: Style) -> str:
    what = "slowed down" if list(step.checks) == ["latency"] else "failed " + ", ".join(step.checks)
    return f"{_names(step, s)} {what} on {_unchanged(step)}: see the audit lines above."


def _unchanged(step: NextStep) -> str:
    if step.model is None:
        return "a model whose float64 reference holds"
    return (f"a model whose float64 reference holds ({_parts(step)} changed)" if step.model
            else "an unchanged model")


def _parts(step: NextStep) -> str:
    return "its " + " and ".join(str(p) for p in step.model or ())


def _output_tolerance(m: ModelVerdict, step: NextStep, s: Style) -> str:
    limits = " and ".join(s.code("tolerance.ceiling" if c == "ceiling" else "output-tolerance")
                          for c in step.checks or ("allclose",))
    return (f"only {limits} failed on {_names(step, s)}: every layer's error is within its baseline "
            f"budget, and a configured limit is under what it gives. Loosen it to what float32 gives, or "
            f"{s.tables} if it passed at the baseline.")


def _graph_differs(m: ModelVerdict, step: NextStep, s: Style) -> str:
    where = f", first at {s.code(step.layer)}" if step.layer else ""
    return (f"the exported graph computes other values than the model on {_names(step, s)}{where}: an error "
            "far past what rounding gives, which its baseline recorded too, so no limit explains it. Look for "
            "what one trace cannot keep (a branch on values, an in-place or data-dependent op); never loosen "
            "the limit.")


def _artifact_differs(m: ModelVerdict, step: NextStep, s: Style) -> str:
    where = f", first at {s.code(step.layer)}" if step.layer else ""
    on = f"{_names(step, s)}{where}"
    return (f"the prebuilt artifact computes other values than this PyTorch model on {on}: it was built "
            "from other weights or code. Rebuild it from the model (or fix the model, if the artifact is "
            "what should ship), then check again; a baseline recorded now would take the mismatch as the "
            "truth.")


def _runtime_changed(m: ModelVerdict, step: NextStep, s: Style) -> str:
    hints = f" — see {s.hints}" if any(h.kind != "hints-unavailable" for h in m.hints) \
        else f" — {s.tables}"
    changed = [f"{s.plain(k, 20)} {s.plain(v.baseline, 40)} → {s.plain(v.run, 40)}"
               for k, v in m.versions.items() if k in ("onnxruntime", "onnx")]
    moved = f" ({', '.join(changed)} since the baseline)" if changed else ""
    if step.model:  # code only the runtimes run: a float32 branch, an export-only path
        return (f"the float64 reference holds, yet {_parts(step)} changed: what {_names(step, s)} compute "
                "beyond it moved (code only they run: a float32 or lower-precision branch, export-only code; "
                f"the ONNX graph){moved}{hints}.")
    if step.model is None:  # what changed is unknown here: no content key was taken
        return (f"the float64 reference holds; the ONNX graph, {_names(step, s)} or code only they run "
                f"(float32 or export-only) changed{moved}{hints}.")
    return f"the PyTorch model is unchanged; the ONNX graph or {_names(step, s)} changed{moved}{hints}."


def _precision_changed(m: ModelVerdict, step: NextStep, s: Style) -> str:
    where = f", and it hurts {s.code(step.layer)} first" if step.layer else ""
    verb = "runs" if len(step.providers) == 1 else "run"
    fix = (f"the build of the shipped file (its {s.code('artifact')})" if m.exporter == "artifact" else
           "the post-export transform or the quantization config")
    return (f"{_names(step, s)} now {verb} a graph that computes below float32 where no configured "
            f"precision asks for it (see the precision audit){where}. Fix {fix} that lowered it; if the "
            f"precision is intended, set {s.code('precision')} for the provider in the config first, then "
            "record its baseline.")


def _refactored(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return (f"passed; layers moved inside modules whose outputs hold (a refactor inside them, first "
            f"{s.code(step.layer)}). To compare them again layer by layer, run {s.code(step.command, 260)}{_commit(m, s)}.")


def _no_baseline(m: ModelVerdict, step: NextStep, s: Style) -> str:
    if m.unowned and m.baseline_path:  # a model renamed in the config: its numbers are there, unjudged
        files = ", ".join(s.code(p) for p in m.unowned)
        one = len(m.unowned) == 1
        return (f"no baseline yet, and {files} {'belongs' if one else 'belong'} to no configured model: if "
                f"this model is {'its' if one else 'one of their'} model renamed, move that file to "
                f"{s.code(m.baseline_path)} ({s.code('git mv')}) and check again, so that its numbers are "
                f"compared; if the model is new, run {s.code(step.command, 260)}{_commit(m, s)}.")
    return f"no baseline yet: run {s.code(step.command, 260)}{_commit(m, s)}."


def _no_entry(m: ModelVerdict, step: NextStep, s: Style) -> str:
    first = next(p for p in m.providers  # never the float64 reference, which shares torch-cpu's name
                 if p.name == step.providers[0] and p.status == TargetStatus.NO_BASELINE)
    return (f"{s.code(first.name)} has no baseline entry for {s.plain(first.label, 60)}: run {s.code(step.command, 300)} "
            f"on a runner that has it{_commit(m, s)}.")


def _bad_baseline(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return (f"its baseline file is damaged or not this model's (the error above says how): restore it with "
            f"{s.code(step.command, 300)} and check again. Re-recording would take the model as it is now, "
            "faults included.")


def _stale_baseline(m: ModelVerdict, step: NextStep, s: Style) -> str:
    if step.model:  # a re-record would take them as the truth, faults included
        return (f"its baseline file cannot judge it (the error above says why), and {_parts(step)} changed "
                f"too: check that change with the baseline's inputs first; re-record with "
                f"{s.code(step.command, 260)}{_commit(m, s)} only if it is intended.")
    return (f"its baseline file cannot judge it (the error above says why): re-record it with "
            f"{s.code(step.command, 260)}{_commit(m, s)}.")


def _restore(m: ModelVerdict, step: NextStep, s: Style) -> str:
    what = ("damages" if m.refused else f"moves {s.code('baseline-dir')} away from" if m.moved_from
            else "deletes")
    return (f"this change {what} its baseline file, so nothing judged the model: "
            f"{'move' if m.moved_from else 'restore'} it with "
            f"{s.code(step.command, 300)} and check again; what that check says is the verdict on this "
            "change.")


def _upgrade(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return (f"its baseline file was written by a newer parity-gate: run {s.code(step.command, 80)} where this "
            "check runs (re-recording it here would drop what the newer one recorded).")


def _model_failed(m: ModelVerdict, step: NextStep, s: Style) -> str:
    if m.error is None:
        return "see the error above."
    why = _MODEL_ERRORS.get(step.error_status, f"it failed ({s.plain(step.error_status, 20)})")
    where = "that job's log says why" if step.error_status == ErrorStatus.NO_RESULT else "the error is above"
    return f"{why}. Reproduce with {s.code(step.command, 200)}; {where}."


def _provider(m: ModelVerdict, step: NextStep) -> ProviderVerdict:
    return next(p for p in m.providers if p.name == step.providers[0])


def _no_gpu(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return s.plain(_provider(m, step).reason or "no GPU provider could run on this runner", 600)


def _record_elsewhere(m: ModelVerdict, step: NextStep, s: Style) -> str:
    one = len(step.providers) == 1
    return (f"{_names(step, s)} cannot run here and {'has' if one else 'have'} no baseline entry yet: record "
            f"{'it' if one else 'them'} where {'it runs' if one else 'they run'}, {s.code(step.command, 300)}"
            f"{_commit(m, s)}; meanwhile {s.code('--allow-missing-gpu')} checks the rest here.")


def _no_result(m: ModelVerdict, step: NextStep, s: Style) -> str:
    p = _provider(m, step)
    return s.plain(p.reason or f"no result file holds {p.name}", 600) + ": see that job's log."


def _load_fail(m: ModelVerdict, step: NextStep, s: Style) -> str:
    return (f"{s.code(step.providers[0])} failed to load on its runner: run {s.code(step.command, 40)} there — its ONNX "
            f"Runtime build, drivers or provider options do not match (a provider listed in {s.code('require')} must be "
            "available).")


def _provider_failed(m: ModelVerdict, step: NextStep, s: Style) -> str:
    how = s.plain(step.error_status or "error", 20)
    return (f"{s.code(step.providers[0])} failed while running the model ({how}): reproduce with "
            f"{s.code(step.command, 300)} on that runner.")


# The one table of words per cause (docs/verdict.md#the-pr-comment-what-failed-and-what-to-do-next).
_WORDS = {StepKind.MODEL_CHANGED: _model_changed, StepKind.WEIGHTS_CHANGED: _model_changed,
          StepKind.RANDOM_DRAWS: _random_draws, StepKind.DEGENERATE: _degenerate,
          StepKind.TRAINING_MODE: _training_mode,
          StepKind.RUNTIME_AUDIT: _runtime_audit, StepKind.RUNTIME_CHANGED: _runtime_changed,
          StepKind.DYNAMIC_SHAPE: _dynamic_shape, StepKind.LAYER_TOLERANCES: _layer_tolerances,
          StepKind.OUTPUT_TOLERANCE: _output_tolerance, StepKind.ARTIFACT_DIFFERS: _artifact_differs,
          StepKind.GRAPH_DIFFERS: _graph_differs,
          StepKind.PRECISION_CHANGED: _precision_changed, StepKind.NO_BASELINE: _no_baseline,
          StepKind.NO_ENTRY: _no_entry, StepKind.BAD_BASELINE: _bad_baseline,
          StepKind.STALE_BASELINE: _stale_baseline, StepKind.UPGRADE: _upgrade,
          StepKind.RESTORE: _restore,
          StepKind.MODEL_FAILED: _model_failed, StepKind.NO_GPU: _no_gpu, StepKind.NO_RESULT: _no_result,
          StepKind.LOAD_FAIL: _load_fail, StepKind.PROVIDER_FAILED: _provider_failed,
          StepKind.RECORD_ELSEWHERE: _record_elsewhere, StepKind.REFACTORED: _refactored}


def listed(names: list[str], s: Style) -> str:
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(s.code(n) for n in names[:8]) + more


def _said(f: Regression, s: Style) -> str:
    """An audit's own words (its figures), which it has in place of a value and a threshold."""
    return f": {s.plain(f.message, 200)}" if f.check in AUDITS and f.message else ""


def unchecked_words(report: Report, s: Style) -> str:
    """The models and cases the change's config stopped checking (``check --changed-since``)."""
    return (f"this change's config no longer checks {listed(report.unchecked or [], s)}, which the base's "
            "does. Review the config change as a change of what passes.")


def loosened_lines(report: Report, s: Style) -> list[str]:
    """What the change's config stopped judging, one line per cause: the models it reads the same for (a
    sweep's skip over every case, a base config that does not load) named together."""
    groups: dict[str, list[str]] = {}
    for m in report.models:
        if words := loosened_words(m, s):
            groups.setdefault(words, []).append(m.name)
    return [f"{listed(names, s)}: {words}" for words, names in groups.items()]


def loosened_words(m: ModelVerdict, s: Style) -> str:
    """What the change's config stopped judging in ``m`` (``check --changed-since``); "" where nothing."""
    lo = m.loosened
    if lo is None:
        return ""
    said = []
    if lo.first is not None:
        f = lo.first
        said.append(f"it passes only under limits this change's config loosened: under the base's it fails "
                    f"at {s.code(f.layer)} on {s.code(f.provider or '')} ({s.plain(str(f.check), 40)} "
                    f"{over(f.check, f.value, f.threshold)}{_said(f, s)})")
    if lo.dropped:
        dropped = ", ".join(s.code(p) for p in lo.dropped[:8])
        said.append(f"this change's config no longer checks {dropped}, which the base's does")
    if lo.off:
        off = ", ".join(s.code(k) for k in lo.off)
        said.append(f"this change's config turns off {off}, which the base's turns on")
    if lo.unread:
        said.append(f"what this change's config loosens is not known: the base's {s.plain(lo.unread, 300)}")
        by_hand = s.code("git diff")
        return "; ".join(said) + f". Compare the config and its files with the base's by hand ({by_hand})."
    return "; ".join(said) + ". Review the config change as a change of what passes."

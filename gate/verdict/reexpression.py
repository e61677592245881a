"""Where float32 rounding may move a refactor's values: a re-expression that computed new weights (a fold)
may move a module's float64 output by their rounding (``moves.rounding``); one that only moved values
(a split, a merge, a rename) has none to excuse any drift, and one that kept its count but not its values
changed weights (``gate.core.reexpressed``). Where a side did not record its tensors, wherever the code
changed.
"""

from __future__ import annotations

from dataclasses import replace

from gate.core.reexpressed import Reexpression, classify
from gate.core.runs import ModelRun
from gate.core.status import KeyPart
from gate.formats.baseline import Baseline


def _tensors_differ(run: ModelRun, baseline: Baseline) -> bool | None:
    """Whether one side holds parameters or buffers the other lacks; None where either did not record them."""
    tensors, recorded = run.meta.tensor_digests, baseline.meta.tensor_digests
    return set(tensors) != set(recorded) if tensors and recorded else None


def _key_changed(run: ModelRun, baseline: Baseline) -> bool:
    now, before = run.meta.content_key or {}, baseline.meta.content_key or {}
    a, b = now.get("parts") or {}, before.get("parts") or {}
    return bool(a and b) and any(a.get(p.value) != b.get(p.value) for p in (KeyPart.CODE, KeyPart.SOURCE))


def reexpression(run: ModelRun, baseline: Baseline) -> Reexpression:
    """The run's re-expressed tensors against its baseline's, by group (``classify``). A new tensor the
    forward never read (by no name: tied ones share a digest) computed nothing any layer rounds: an unused
    buffer beside a fault is no fold."""
    m, b = run.meta, baseline.meta
    now = m.tensor_digests or {}
    re = classify(now, b.tensor_digests or {}, m.tensor_sums, b.tensor_sums)
    read = {now[t] for t in run.first_use if t in now}
    unread = {t for t in re.computed if t in now and t not in (b.tensor_digests or {}) and now[t] not in read}
    return replace(re, computed=re.computed - unread) if read and unread else re


def rounds(run: ModelRun, baseline: Baseline) -> bool:
    """Whether a re-expression computed new weights in float32 (a fold): their rounding may move outputs;
    where a side did not record its tensors, wherever the code changed."""
    differ = _tensors_differ(run, baseline)
    return _key_changed(run, baseline) if differ is None else bool(reexpression(run, baseline).computed)


def code_changed(run: ModelRun, baseline: Baseline) -> bool:
    """Whether the model's code changed since the baseline, as far as the run can tell: its content
    key's code or source part, or tensors of the model's data only one side has."""
    return _key_changed(run, baseline) or bool(_tensors_differ(run, baseline))


def modules_changed(run: ModelRun, baseline: Baseline) -> list[str] | None:
    """The modules whose own code changed (``Meta.module_code``), or where among their own operations they
    call their children (``Meta.module_calls``, absent from older baselines: not compared there); None where
    a side did not digest its modules."""
    now, before = run.meta.module_code, baseline.meta.module_code
    if not now or not before:
        return None
    calls, called = run.meta.module_calls, baseline.meta.module_calls
    return [m for m in {**now, **before} if now.get(m) != before.get(m)
            or (calls is not None and called is not None and calls.get(m) != called.get(m))]


def traced_ops_changed(run: ModelRun, baseline: Baseline) -> bool:
    """Whether the operations the probe traced differ from the baseline's (the content key's code part):
    the model computes something else, whatever its source files say. Only where the same parity-gate
    traced both: another one may write the trace's lines otherwise."""
    keys = (run.meta.content_key or {}, baseline.meta.content_key or {})
    now, before = (k.get("parts") or {} for k in keys)
    return bool(now and before) and now.get(KeyPart.GATE.value) == before.get(KeyPart.GATE.value) and \
        now.get(KeyPart.CODE.value) != before.get(KeyPart.CODE.value)

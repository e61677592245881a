"""``update-baseline``'s "`check` will fail" warnings are the verdict's own rule: on the same run,
the layers it warns about are exactly the layers ``check`` fails when it judges that run against
the baseline ``update-baseline`` writes from it (per-layer rules and per-precision ceilings
included), and a run it says nothing about passes."""

from __future__ import annotations

import pytest

from gate.commands import update
from gate.commands.update import WARNED_ROWS, warnings_for
from gate.formats.baseline import merge_run
from gate.verdict.judge import model_verdict
from tests.support.verdicts import NAMES, fp, run, runtime, spec

GPU = dict(device="cuda-sm90")
CASES = {
    "within every ceiling": (spec(), [runtime()]),
    "over the global ceiling, under the layer's own": (spec(layers={"b": {"ceiling": 0.5}}), [runtime(errs={"b": 0.2})]),
    "a layer rule that lowers the ceiling": (spec(layers={"c": {"ceiling": 1e-6}}), [runtime(errs={"c": 1e-5})]),
    "float16 within its own ceiling": (spec(), [runtime("CUDAExecutionProvider", errs={"b": 3e-2}, precision="float16", **GPU)]),
    "float16 over its own ceiling": (spec(), [runtime("CUDAExecutionProvider", errs={"b": 0.1}, precision="float16", **GPU)]),
    "float32 over on every layer": (spec(), [runtime(errs=dict.fromkeys(NAMES, 0.5))]),
    "one provider of two over": (spec(), [runtime(), runtime("OpenVINOExecutionProvider", errs={"a": 0.3})]),
}


def _warned(spec_, r) -> list[tuple[str, str]]:
    """The (provider, layer) each warning names; a warning that names none fails the test."""
    pairs = [(p.name, layer) for p in r.providers for layer in p.layers]
    out = []
    for line in warnings_for(spec_, r):
        named = [pair for pair in pairs if line.startswith(f"{pair[0]}: {pair[1]} (")]
        assert len(named) == 1, line
        out += named
    return out


@pytest.mark.parametrize("case", CASES)
def test_what_update_baseline_warns_about_is_what_check_fails(case, monkeypatch):
    monkeypatch.setattr(update, "WARNED_ROWS", 10**6)  # every layer named (the cut: the last test)
    spec_, runtimes = CASES[case]
    r = run()
    r.providers.extend(runtimes)
    verdict = model_verdict(spec_, r, merge_run(r), "b.msgpack.zst", "cmd")
    failed = {(p.name, row.layer) for p in verdict.providers for row in p.rows if row.failed}
    warned = _warned(spec_, r)
    assert len(warned) == len(set(warned)) and set(warned) == failed
    assert bool(failed) == (verdict.status == "regressed")


def test_a_shape_or_a_non_finite_value_no_baseline_can_fix_is_warned():
    r = run()
    prun = runtime(names=("a", "c", "(model)"))
    prun.layers["b"] = type(prun.layers["a"])("ok", fp(shape=(4, 2)), 1e-7)
    prun.layers["c"] = type(prun.layers["a"])("ok", fp(nan=1), 1e-7)
    r.providers.append(prun)
    lines = warnings_for(spec(), r)
    assert any(line.startswith("CPUExecutionProvider: b (shape)") for line in lines)
    assert any(line.startswith("CPUExecutionProvider: c (nonfinite)") for line in lines)


def test_many_failing_layers_are_named_first_few_then_counted():
    names = tuple(f"l{i}" for i in range(WARNED_ROWS + 4)) + ("(model)",)
    r = run(names=names)
    r.providers.append(runtime(names=names, errs=dict.fromkeys(names, 0.5)))
    lines = warnings_for(spec(), r)
    assert [line.split(" (")[0] for line in lines[:WARNED_ROWS]] == [f"CPUExecutionProvider: l{i}" for i in range(WARNED_ROWS)]
    assert lines[WARNED_ROWS] == "CPUExecutionProvider: and 5 more layers `check` will fail on"

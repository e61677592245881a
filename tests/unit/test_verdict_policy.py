"""gate.verdict.judge, driven directly: target audits (max-slowdown, placement), required
providers, missing baselines, the device-class fallback, the first-regression tie rules, and
the report's verdict and exit code. Runs and baselines are built by hand (tests/support/verdicts.py).
"""

from __future__ import annotations

import pytest

from gate.core.status import Verdict
from gate.core.target import Target
from gate.render import render_markdown
from gate.verdict.judge import Policy, assemble, model_verdict
from tests.support.verdicts import CPU, baseline, entry, fp, run, runtime, spec

JUST_PAST = 1 + 1e-9
PATH, CMD = "baselines/m.msgpack.zst", "parity-gate update-baseline --model m"


def judge(*pruns, base=None, policy=None, moves=None, **fps):
    r = run(moves=moves, **fps)
    r.providers = list(pruns)
    return model_verdict(spec(), r, base, PATH, CMD, policy or Policy())


def target(v, name):
    return next(p for p in v.providers if p.name == name and p.role == "runtime")


# max-slowdown ----------------------------------------------------------------------------

@pytest.mark.parametrize("past", [False, True])
def test_max_slowdown_at_its_limit_passes_and_past_it_regresses(past):
    latency = 2.0 * 1.5 * (JUST_PAST if past else 1)
    v = judge(runtime(latency_ms=latency), base=baseline(entry(latency_ms=2.0)), policy=Policy(max_slowdown=0.5))
    cpu = target(v, "CPUExecutionProvider")
    assert cpu.baseline_latency_ms == 2.0 and cpu.latency_ms == latency
    assert [a.check for a in cpu.audits] == (["latency"] if past else [])
    assert cpu.status == ("regressed" if past else "pass")
    if past:
        assert cpu.first_regression.layer == "(model)" and cpu.first_regression.check == "latency"
        assert "1.50x the baseline 2 ms (max-slowdown 0.5)" in cpu.first_regression.message
        assert v.status == "regressed"


def test_latency_is_reported_but_not_gated_without_max_slowdown():
    v = judge(runtime(latency_ms=100.0), base=baseline(entry(latency_ms=1.0)))
    assert target(v, "CPUExecutionProvider").audits == [] and v.status == "pass"


# placement -------------------------------------------------------------------------------

PLACED = {"nodes": 10, "by_provider": {"CUDAExecutionProvider": 10}, "fallback_ops": [], "fallback_nodes": []}
FELL_BACK = {"nodes": 10, "by_provider": {"CUDAExecutionProvider": 8, "CPUExecutionProvider": 2},
             "fallback_ops": ["NonZero"], "fallback_nodes": ["NonZero:n1", "NonZero:n2"]}


@pytest.mark.parametrize("policy, status", [("warn", "pass"), ("fail", "regressed"), ("off", "pass")])
def test_new_cpu_fallbacks_warn_or_fail_as_configured(policy, status):
    v = judge(runtime(placement=FELL_BACK), base=baseline(entry(placement=PLACED)), policy=Policy(placement=policy))
    cpu = target(v, "CPUExecutionProvider")
    assert cpu.status == status
    if policy == "off":
        assert cpu.audits == []
        return
    (audit,) = cpu.audits
    assert (audit.check, audit.status) == ("placement", "fail" if policy == "fail" else "warn")
    assert "2 more node(s) fall back to another EP (new op types: NonZero)" in audit.message


def test_unchanged_placement_is_no_audit():
    v = judge(runtime(placement=FELL_BACK), base=baseline(entry(placement=FELL_BACK)), policy=Policy(placement="fail"))
    assert target(v, "CPUExecutionProvider").audits == [] and v.status == "pass"


# require, skips, errors ------------------------------------------------------------------

def test_skipped_provider_passes_unless_required():
    skipped = runtime("CUDAExecutionProvider", device="gpu")
    skipped.status, skipped.reason, skipped.layers = "skipped", "skipped: CUDAExecutionProvider not available here", {}
    v = judge(runtime(), skipped, base=baseline(entry()))
    assert (target(v, "CUDAExecutionProvider").status, v.status) == ("skipped", "pass")
    v = judge(runtime(), skipped, base=baseline(entry()), policy=Policy(require=("CUDAExecutionProvider",)))
    cuda = target(v, "CUDAExecutionProvider")
    assert (cuda.status, cuda.error_status, v.status) == ("error", "LOAD_FAIL", "error")
    assert "required but not available here" in cuda.reason


def test_failed_provider_is_an_error_of_the_model():
    failed = runtime("OpenVINOExecutionProvider")
    failed.status, failed.error_status, failed.reason = "error", "CRASH", "worker killed by SIGSEGV"
    v = judge(runtime(), failed, base=baseline(entry()))
    ov = target(v, "OpenVINOExecutionProvider")
    assert (ov.status, ov.error_status, v.status) == ("error", "CRASH", "error")
    assert assemble([v], {}).exit_code == Verdict.ERROR.exit_code == 3


# missing baselines -----------------------------------------------------------------------

def test_missing_baseline_fails_and_names_the_command():
    v = judge(runtime())
    assert v.status == "no-baseline" and not v.baseline_exists
    assert v.message == f"no baseline at {PATH}: create it with `{CMD}`"
    assert v.providers[0].status == "no-baseline" and v.providers[0].rows == []
    report = assemble([v], {})
    assert (report.verdict, report.exit_code, report.first_regression) == ("regressed", 1, None)


def test_missing_entry_for_one_provider_says_how_to_add_it():
    v = judge(runtime(), runtime("OpenVINOExecutionProvider"), base=baseline(entry()))
    ov = target(v, "OpenVINOExecutionProvider")
    assert ov.status == "no-baseline"
    assert f"`{CMD} --provider OpenVINOExecutionProvider`" in ov.reason
    assert v.status == "no-baseline" and assemble([v], {}).verdict == "regressed"


def test_a_regression_outranks_a_missing_entry():
    v = judge(runtime(errs={"a": 1.0}), runtime("OpenVINOExecutionProvider"), base=baseline(entry()))
    assert v.status == "regressed"


# device-class fallback -------------------------------------------------------------------

def test_entry_of_the_same_architecture_stands_in_and_says_so():
    base = baseline(entry(device="x86_64-avx512", errs={"b": 1e-9}), entry(device="x86_64-avx"))
    found, note = base.entry_for(Target("CPUExecutionProvider", "x86_64-avx2"))
    assert found.target.device_class == "x86_64-avx" and found is base.entries[1]  # first by label
    assert note == "compared with the baseline of device class x86_64-avx (none for x86_64-avx2)"
    v = judge(runtime(), base=base)
    assert target(v, "CPUExecutionProvider").reason == note and v.status == "pass"


def test_own_entry_wins_over_a_stand_in():
    base = baseline(entry(device="x86_64-avx"), entry(device=CPU, errs={"b": 1e-9}))
    found, note = base.entry_for(Target("CPUExecutionProvider", CPU))
    assert found.target.device_class == CPU and note is None


@pytest.mark.parametrize("recorded, running", [
    ("aarch64", "x86_64-avx2"),  # another architecture
    ("cuda-sm80-A100", "cuda-sm90-H100"),  # GPU classes never stand in for one another
    ("x86_64-avx2:bfloat16", "x86_64-avx512"),  # another precision
])
def test_no_stand_in_across_architectures_gpus_or_precisions(recorded, running):
    base = baseline(entry(device=recorded.split(":")[0], precision=(recorded.split(":") + ["float32"])[1]))
    found, note = base.entry_for(Target("CPUExecutionProvider", running))
    assert (found, note) == (None, None)


def test_precision_entries_are_kept_apart():
    base = baseline(entry(), entry(precision="bfloat16", errs={"b": 1e-2}))
    found, _ = base.entry_for(Target("CPUExecutionProvider", CPU, "bfloat16"))
    assert found.target.label == f"{CPU}:bfloat16" and found.layers["b"].err == 1e-2


# first regression: the tie rules ---------------------------------------------------------

def test_first_regression_is_the_earliest_layer_over_all_targets():
    v = judge(runtime(errs={"c": 1.0}), runtime("OpenVINOExecutionProvider", errs={"b": 1.0}),
              base=baseline(entry(), entry("OpenVINOExecutionProvider")))
    fr = v.first_regression
    assert (fr.provider, fr.layer, fr.check, fr.precision) == ("OpenVINOExecutionProvider", "b", "error-growth", "float32")
    assert target(v, "CPUExecutionProvider").first_regression.layer == "c"


def test_on_a_tie_the_reference_explains_the_runtime():
    v = judge(runtime(errs={"b": 1.0}), base=baseline(entry()), moves={"b": 1e-3, "(model)": 1e-3})
    assert (v.first_regression.provider, v.first_regression.precision) == ("torch-cpu", "float64")
    assert v.first_regression.check == "reference-drift"


def test_on_a_tie_between_runtimes_the_first_listed_wins():
    v = judge(runtime("OpenVINOExecutionProvider", errs={"b": 1.0}), runtime(errs={"b": 1.0}),
              base=baseline(entry(), entry("OpenVINOExecutionProvider")))
    assert v.first_regression.provider == "OpenVINOExecutionProvider"


def test_within_a_target_the_earliest_layer_wins_over_the_worst():
    v = judge(runtime(errs={"a": 1e-5, "c": 1.0}), base=baseline(entry()))
    fr = target(v, "CPUExecutionProvider").first_regression
    assert (fr.layer, fr.check) == ("a", "error-growth")


def test_a_failing_audit_counts_only_where_no_layer_failed():
    v = judge(runtime(errs={"b": 1.0}, latency_ms=9.0), base=baseline(entry(latency_ms=1.0)),
              policy=Policy(max_slowdown=0.1))
    assert target(v, "CPUExecutionProvider").first_regression.layer == "b"


def test_across_models_the_first_configured_model_leads():
    later = judge(runtime(errs={"a": 1.0}), base=baseline(entry()))
    later.name = "first-in-config"
    other = judge(runtime(errs={"c": 1.0}), base=baseline(entry()))
    report = assemble([later, other], {})
    assert report.first_regression.model == "first-in-config" and report.first_regression.layer == "a"
    assert (report.verdict, report.exit_code) == ("regressed", 1)
    assert report.summary.regressions == 2 and report.summary.models == 2


def test_a_clean_run_passes_with_exit_zero():
    v = judge(runtime(), base=baseline(entry()))
    report = assemble([v], {"backend": "native"})
    assert (v.status, report.verdict, report.exit_code, report.first_regression) == ("pass", "pass", 0, None)
    assert report.summary.providers == ["CPUExecutionProvider"] and report.summary.layers == 4


def test_nan_in_one_runtime_is_its_first_regression_even_below_every_threshold():
    prun = runtime(errs={"a": 0.0})
    prun.layers["a"].fp = fp(nan=1)
    v = judge(prun, base=baseline(entry()))
    assert (v.first_regression.layer, v.first_regression.check) == ("a", "nonfinite")


def test_a_failed_audit_is_read_as_an_audit_never_as_an_error_that_moved():
    """A slowdown past max-slowdown with every layer as recorded: the hints that read an error against the
    reference say nothing, and the report names the audit, not a layer's value. Twin: a layer's error
    that moved keeps its runtime hints."""
    slow = judge(runtime(latency_ms=9.0), base=baseline(entry(latency_ms=1.0)),
                 policy=Policy(max_slowdown=0.1))
    assert slow.status == "regressed" and target(slow, "CPUExecutionProvider").audit_only
    assert not [h.kind for h in slow.hints if h.kind in ("runtime-change", "introduced-vs-inherited")]
    text = render_markdown(assemble([slow], {}))
    assert "failed its latency audit on `CPUExecutionProvider`" in text and "measured **—**" not in text
    moved = judge(runtime(errs={"b": 1.0}), base=baseline(entry()))
    assert not target(moved, "CPUExecutionProvider").audit_only
    assert "runtime-change" in [h.kind for h in moved.hints]


def test_a_provider_run_in_two_precisions_is_named_with_the_one_that_failed():
    """torch-cpu in float32 passes and in bfloat16 fails: the step names torch-cpu:bfloat16, never the
    float32 run. Twin: one precision alone keeps the bare name."""
    from gate.verdict.next_step import next_step

    base = baseline(entry("torch-cpu"), entry("torch-cpu", precision="bfloat16", errs={"b": 1e-3}))
    v = judge(runtime("torch-cpu"), runtime("torch-cpu", precision="bfloat16", errs={"b": 1.0}), base=base)
    assert v.status == "regressed" and next_step(v).providers == ("torch-cpu:bfloat16",)
    alone = judge(runtime("torch-cpu", precision="bfloat16", errs={"b": 1.0}),
                  base=baseline(entry("torch-cpu", precision="bfloat16", errs={"b": 1e-3})))
    assert next_step(alone).providers == ("torch-cpu",)

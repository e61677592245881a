"""gate.render.next_steps and gate.render.notices: one line of next steps per model that did not pass,
worded for its cause; runtime versions that differ from the baseline's; errors as multiples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.render import render_markdown
from gate.render.next_steps import next_steps
from gate.render.text import times
from gate.verdict.report_file import parse_report
from gate.verdict.types import Report

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"


def raw(name: str) -> dict:
    return json.loads((REPORTS / f"{name}.json").read_text(encoding="utf-8"))


def typed(report: dict) -> Report:
    return parse_report(json.dumps(report).encode(), "test")


def steps(report: dict) -> list[str]:
    return next_steps(typed(report)).splitlines()[2:]


def keyed(report: dict, *changed: str) -> dict:
    """The report of a check that keyed its models: what of each changed is known (here: ``changed``)."""
    for model in report["models"]:
        model["reuse"] = {"key": "k", "reference": False, "why": "key-changed", "changed": list(changed),
                          "details": [], "stages": []}
    return report


def test_a_model_change_says_update_the_baseline_if_intended():
    line = steps(raw("real-check-reference-drift"))[0]
    assert line == ("- `tiny-cnn`: the model changed (its float64 reference moved first at `stem.0`). If that is "
                    "intended, run `parity-gate update-baseline --model tiny-cnn` and commit "
                    "`baselines/tiny-cnn.msgpack.zst`.")


def test_a_runtime_regression_names_the_provider_and_points_at_the_hints():
    report = keyed(raw("regressed"), "versions")
    report["models"][0]["hints"] = [{"kind": "runtime-change", "layer": "conv2", "provider": "CPUExecutionProvider",
                                     "message": "the reference did not move", "evidence": {}}]
    line = steps(report)[0]
    assert line == ("- `tiny-cnn`: the PyTorch model is unchanged; the ONNX graph or `CPUExecutionProvider` changed "
                    "— see the hints under **Diagnosis**.")
    from gate.render.next_steps import TEXT, step_words
    console = step_words(typed(report).models[0], TEXT)  # no Diagnosis section there: its hint lines
    assert console.endswith("— see its `hint` lines.") and "Diagnosis" not in console


def test_a_runtime_regression_where_no_key_was_taken_never_calls_the_model_unchanged():
    """`report` over `export`/`collect` results takes no content key: what of the model changed is unknown,
    so the step names every candidate, the code only the runtimes run among them; its twin, a keyed report
    whose model did not change, says "unchanged" (above)."""
    line = steps(raw("regressed"))[0]
    assert "unchanged" not in line
    assert line.startswith("- `tiny-cnn`: the float64 reference holds; the ONNX graph, "
                           "`CPUExecutionProvider` or code only they run (float32 or export-only) changed")
    report = keyed(raw("pass"))
    model = report["models"][0]
    model["status"], report["verdict"] = "regressed", "regressed"
    cpu = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    cpu["status"], cpu["audits"] = "regressed", [{"check": "latency", "status": "fail", "message": "2.1x"}]
    assert "on an unchanged model" in steps(report)[0]
    del model["reuse"]
    assert "on a model whose float64 reference holds:" in steps(report)[0]


def test_a_runtime_regression_where_the_models_code_changed_never_calls_the_model_unchanged():
    """A float32-only branch, or code only the export takes: the float64 reference holds while the
    model's source and code changed. The step says the reference holds and what changed; its twin, a
    report whose model key did not change, keeps "unchanged"."""
    report = raw("regressed")
    report["models"][0]["reuse"] = {"key": "k", "reference": False, "why": "key-changed",
                                    "changed": ["code", "source"], "details": [], "stages": []}
    line = steps(report)[0]
    assert "unchanged" not in line
    assert line.startswith("- `tiny-cnn`: the float64 reference holds, yet its code and source changed: what "
                           "`CPUExecutionProvider` compute beyond it moved")
    report["models"][0]["reuse"]["changed"] = ["versions"]
    assert "the PyTorch model is unchanged" in steps(report)[0]


def test_a_new_onnxruntime_is_named_in_the_step_and_the_notices():
    report = raw("regressed")
    report["models"][0]["versions"] = {"onnxruntime": {"baseline": "1.31.1", "run": "1.32.0"}}
    assert "changed (onnxruntime 1.31.1 → 1.32.0 since the baseline)" in steps(report)[0]
    text = render_markdown(typed(report))
    assert "- ℹ️ `tiny-cnn` ran with onnxruntime 1.32.0; its baseline was recorded with 1.31.1." in text


def test_a_missing_baseline_gives_the_command_with_the_config_it_needs():
    report = raw("regressed")
    # The command is the report's typed field, never read back out of a message.
    report["models"][1]["message"] = "no baseline at models/b/tiny-mlp.msgpack.zst: create it with `something else`"
    report["models"][1]["update_command"] = "parity-gate update-baseline --model tiny-mlp --config models/vision.toml"
    report["models"][1]["baseline"]["path"] = "models/b/tiny-mlp.msgpack.zst"
    assert steps(report)[1] == ("- `tiny-mlp`: no baseline yet: run `parity-gate update-baseline --model tiny-mlp "
                                "--config models/vision.toml` and commit `models/b/tiny-mlp.msgpack.zst`.")
    del report["models"][1]["update_command"]  # a report from an older writer: the plain command
    assert "run `parity-gate update-baseline --model tiny-mlp` and commit" in steps(report)[1]


def test_a_device_class_without_an_entry_says_where_to_create_it():
    report = raw("pass")
    model = report["models"][0]
    model["status"], report["verdict"] = "no-baseline", "regressed"
    cuda = next(p for p in model["providers"] if p["name"] == "CUDAExecutionProvider")
    cuda.update(status="no-baseline", device="cuda-sm90-NVIDIA_H100", reason=None)
    assert steps(report) == [
        "- `tiny-cnn`: `CUDAExecutionProvider` has no baseline entry for cuda-sm90-NVIDIA\\_H100: run "
        "`parity-gate update-baseline --model tiny-cnn --provider CUDAExecutionProvider` on a runner that has it "
        "and commit `baselines/tiny-cnn.msgpack.zst`."]


def test_a_torch_cpu_entry_missing_names_its_own_device_class_not_the_references():
    """`torch-cpu` at bfloat16 added: the float64 reference shares its name. The step names the missing
    entry's device class, and the title says an entry is missing, not the baseline."""
    report = raw("pass")
    model = report["models"][0]
    model["status"], report["verdict"] = "no-baseline", "regressed"
    ref = next(p for p in model["providers"] if p["role"] == "reference")
    missing = {"role": "runtime", "status": "no-baseline", "layers": [], "reason": None,
               "device": "x86_64-avx2:bfloat16", "precision": "bfloat16"}
    model["providers"].append({**ref, **missing})
    assert "`torch-cpu` has no baseline entry for x86\\_64-avx2:bfloat16: run" in steps(report)[0]
    assert "### ❌ parity-gate: no baseline entry for `tiny-cnn`" in render_markdown(typed(report))


def test_a_provider_that_failed_to_load_points_at_doctor_on_its_runner():
    report = raw("pass")
    model = report["models"][0]
    model["status"], report["verdict"] = "error", "error"
    cuda = next(p for p in model["providers"] if p["name"] == "CUDAExecutionProvider")
    cuda.update(status="error", error_status="LOAD_FAIL", reason="libcudnn.so.9: cannot open shared object file")
    [line] = steps(report)
    assert line.startswith("- `tiny-cnn`: `CUDAExecutionProvider` failed to load on its runner: run "
                           "`parity-gate doctor` there")
    text = render_markdown(typed(report))
    assert "💥 `tiny-cnn` · `CUDAExecutionProvider` failed (LOAD\\_FAIL): libcudnn.so.9" in text


def test_a_provider_failing_beside_a_model_change_or_a_changed_graph_is_not_sent_to_doctor():
    """The model's reference moved and its new graph no longer loads (a bfloat16 Gemm): reproduce it, the
    graph's doing; neither doctor nor update-baseline (it refuses while a provider fails). So for a graph
    that changed since the baseline. Twin: the same graph failing to load is still the runner's (doctor)."""
    report = raw("real-check-reference-drift")
    model = report["models"][0]
    model["status"], report["verdict"] = "error", "error"
    cpu = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    cpu.update(status="error", error_status="LOAD_FAIL", reason="NOT_IMPLEMENTED: Gemm(13)", layers=[],
               first_regression=None)
    reproduce = ("- `tiny-cnn`: `CPUExecutionProvider` failed while running the model (LOAD\\_FAIL): "
                 "reproduce with `parity-gate check --model tiny-cnn --provider CPUExecutionProvider`")
    assert steps(report)[0].startswith(reproduce)
    ref = next(p for p in model["providers"] if p["role"] == "reference")
    ref.update(status="pass", first_regression=None, layers=[dict(r, status="pass") for r in ref["layers"]])
    model["reuse"] = {"key": "a" * 64, "reference": True, "cache": "hit", "why": None, "stages": [],
                      "changed": [], "details": [],
                      "shipped": {"digest": "1" * 64, "baseline": "2" * 64, "changed": True}}
    line = steps(report)[0]
    assert line.startswith("- `tiny-cnn`: `CPUExecutionProvider` failed while running the model "
                           "(LOAD\\_FAIL): reproduce with `parity-gate check --model tiny-cnn --provider "
                           "CPUExecutionProvider`")
    model["reuse"]["shipped"] = {"digest": "1" * 64, "baseline": "1" * 64, "changed": False}
    assert "run `parity-gate doctor` there" in steps(report)[0]


def test_a_gpu_provider_never_recorded_is_recorded_where_it_runs_not_installed_here():
    report = raw("pass")
    model = report["models"][0]
    model["status"], report["verdict"], model["unrecorded"] = "error", "error", ["CUDAExecutionProvider"]
    cuda = next(p for p in model["providers"] if p["name"] == "CUDAExecutionProvider")
    cuda.update(status="error", error_status="NO_GPU", reason="no GPU provider could run here: install onnxruntime-gpu")
    assert steps(report) == [
        "- `tiny-cnn`: `CUDAExecutionProvider` cannot run here and has no baseline entry yet: record it where it runs, "
        "`parity-gate update-baseline --model tiny-cnn --provider CUDAExecutionProvider` and commit "
        "`baselines/tiny-cnn.msgpack.zst`; meanwhile `--allow-missing-gpu` checks the rest here."]
    model["unrecorded"] = []  # recorded elsewhere: this runner lacks the package
    assert "install onnxruntime-gpu" in steps(report)[0]


def test_a_model_that_failed_to_export_says_how_to_reproduce_it():
    assert steps(raw("export-fail")) == [
        "- `resnet18`: it failed to export to ONNX. Reproduce with `parity-gate check --model resnet18`; the error is "
        "above."]


def test_a_slowdown_alone_is_worded_as_one():
    report = keyed(raw("pass"))
    model = report["models"][0]
    model["status"], report["verdict"] = "regressed", "regressed"
    cpu = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    cpu["status"] = "regressed"
    cpu["audits"] = [{"check": "latency", "status": "fail", "message": "2.1x the baseline"}]
    assert steps(report) == ["- `tiny-cnn`: `CPUExecutionProvider` slowed down on an unchanged model: see the audit "
                             "lines above."]


def test_a_pass_has_no_next_steps():
    assert next_steps(typed(raw("pass"))) == ""


@pytest.mark.parametrize(("ratio", "said"), [
    (0.5, "≈ 0.5×"), (9.94, "≈ 9.9×"), (9.96, "≈ 10×"), (99.4, "≈ 99×"), (99.6, "≈ 100×"), (1_549, "≈ 1,500×"),
    (9_545, "≈ 9,500×"), (2e15, "≫ 10¹⁵×")])
def test_multiples_keep_two_significant_digits(ratio, said):
    assert times(ratio * 1e-7, 1e-7) == said


@pytest.mark.parametrize(("value", "baseline"), [(1e-3, 0.0), (1e-3, None), (None, 1e-7), (float("nan"), 1e-7),
                                                 (1e-3, float("inf")), (1e-12, 1.0), (True, 1.0)])
def test_no_multiple_without_a_positive_finite_baseline(value, baseline):
    assert times(value, baseline) == ""


# one table: every cause, its step, and update-baseline only where recording is the fix ----------------

def _drift_with(hints=(), audits=()) -> dict:
    report = raw("real-check-reference-drift")
    report["models"][0]["hints"] = list(hints)
    report["models"][0]["audits"] = list(audits)
    return report


def _model_change(cause: str) -> dict:
    return {"kind": "model-change", "layer": "stem.0", "provider": "torch-cpu", "message": "moved",
            "evidence": {"cause": cause}}


RANDOM = {"check": "random-draws", "status": "warn",
          "message": "the forward draws random numbers (aten.native_dropout.default at kws.py:42 in forward)"}
TRAINING = {"check": "training-mode", "status": "fail", "layer": "stem.0",
            "message": "the factory left 1 module(s) in training mode (drop), and eval mode changes the "
                       "outputs"}


def _precision(report: dict) -> dict:
    cpu = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    cpu["audits"] = [{"check": "precision", "status": "fail", "message": "CPUExecutionProvider: now int8"}]
    return report


def _dynamic(report: dict) -> dict:
    report["models"][0]["audits"] = [{"check": "dynamic-shape", "status": "fail",
                                      "message": "input `x` dimension 0 is static in the exported graph"}]
    return report


def _artifact(report: dict) -> dict:
    report["models"][0]["exporter"] = "artifact"
    return report


def _allclose_only(report: dict, check: str = "allclose") -> dict:
    """Every failed runtime row is output-tolerance's allclose, or a ceiling over an error within its
    baseline budget (growth is judged first): no layer's error past its budget."""
    for p in report["models"][0]["providers"]:
        for r in p["layers"]:
            if r["status"] == "fail":
                r["check"] = check
    return report


def test_a_ceiling_under_an_error_that_held_its_budget_is_a_limit_not_a_runtime_change():
    """The config tightened `tolerance.ceiling` under the runtimes' float32 error: the step says so. Its
    twin, a ceiling row with no baseline value (the error could have grown), stays a runtime change."""
    from gate.verdict.next_step import next_step

    report = typed(_allclose_only(raw("regressed"), "ceiling"))
    step = next_step(report.models[0])
    assert (step.kind, step.checks) == ("output-tolerance", ("ceiling",))
    assert "only `tolerance.ceiling` failed on `CPUExecutionProvider`" in next_steps(report)
    unknown = _allclose_only(raw("regressed"), "ceiling")
    for p in unknown["models"][0]["providers"]:
        for r in p["layers"]:
            r["baseline"] = None
    assert next_step(typed(unknown).models[0]).kind == "runtime-changed"


def test_a_ceiling_failed_far_past_float32s_is_a_graph_that_differs_never_a_limit_to_loosen():
    """An error of 1.95 recorded in the baseline (a trace that kept one branch) and failing only the
    ceiling: no rounding explains it, so the step never says to loosen the limit (an artifact's says to
    rebuild it). Twin: an error under float32's default ceiling is a limit the config tightened (above)."""
    from gate.verdict.next_step import next_step

    for artifact in (False, True):
        report = _allclose_only(raw("regressed"), "ceiling")
        for p in report["models"][0]["providers"]:
            for r in p["layers"]:
                if r["status"] == "fail":
                    r["value"] = 1.95
        report = typed(_artifact(report) if artifact else report)
        step = next_step(report.models[0])
        assert step.kind == ("artifact-differs" if artifact else "graph-differs"), step
        assert "loosen" not in next_steps(report).lower().replace("never loosen", "")


CAUSES = {  # cause -> (a report of it, what its step says)
    "model-changed": (lambda: _drift_with([_model_change("code")]), "the model changed"),
    "weights-changed": (lambda: _drift_with([_model_change("weights")]),
                        "the model's weights changed and its code runs the same operations"),
    "random-draws": (lambda: _drift_with([_model_change("random")], [RANDOM]), "Re-recording cannot fix it"),
    "training-mode": (lambda: _drift_with([], [TRAINING]), "call `model.eval()` in the factory"),
    "precision-changed": (lambda: _precision(raw("regressed")),
                          "computes below float32 where no configured precision"),
    "dynamic-shape": (lambda: _dynamic(raw("regressed")), "declare it in `dynamic-shapes`"),
    "output-tolerance": (lambda: _allclose_only(raw("regressed")), "only `output-tolerance` failed on"),
    "runtime-changed": (lambda: keyed(raw("regressed")), "the ONNX graph or"),  # its twin: an error that grew
}


@pytest.mark.parametrize("kind", sorted(CAUSES))
def test_each_cause_gets_its_own_step_and_update_baseline_only_where_recording_is_the_fix(kind):
    from gate.verdict.next_step import RECORDS, next_step

    report, said = CAUSES[kind]
    typed_report = typed(report())
    step = next_step(typed_report.models[0])
    assert step.kind == kind
    line = next_steps(typed_report).splitlines()[2]
    assert said in line, line
    assert ("update-baseline" in line) is (step.kind in RECORDS), line


def test_a_shipped_file_that_computes_below_float32_points_at_its_build():
    """An `artifact` has no transform or quantization config of the gate's to fix: its build lowered it."""
    line = next_steps(typed(_artifact(_precision(raw("regressed"))))).splitlines()[2]
    assert "Fix the build of the shipped file (its `artifact`)" in line and "transform" not in line
    assert "Fix the post-export transform" in next_steps(typed(_precision(raw("regressed")))).splitlines()[2]


def test_every_step_kind_has_words():
    from gate.core.status import StepKind
    from gate.render.next_steps import _WORDS

    assert set(_WORDS) == set(StepKind)


@pytest.mark.parametrize("repair", ["git checkout -- baselines/tiny-cnn.msgpack.zst",
                                    "git lfs pull --include baselines/tiny-cnn.msgpack.zst"])
def test_a_damaged_baseline_says_restore_it_and_never_re_record_it(repair):
    """A truncated file or an LFS pointer: re-recording would take the model as it is now, a fault included.
    Twin: a file of an older format (no repair) is re-recorded, as nothing else reads it."""
    from gate.verdict.next_step import next_step

    def first_step(repair: str | None):
        report = raw("real-check-reference-drift")
        model = report["models"][0]
        model.update(status="error", providers=[], hints=[], audits=[],
                     error={"status": "BAD_BASELINE", "message": "baseline `b.msgpack.zst`: bad",
                            **({"repair": repair} if repair else {})})
        report["verdict"] = "error"
        typed_report = typed(report)
        return next_step(typed_report.models[0]), next_steps(typed_report).splitlines()[2]

    step, line = first_step(repair)
    assert (step.kind, step.command) == ("bad-baseline", repair)
    assert f"restore it with `{repair}`" in line and "update-baseline" not in line
    step, line = first_step(None)
    assert (step.kind, step.command) == ("stale-baseline", "parity-gate update-baseline --model tiny-cnn")
    assert "re-record it with `parity-gate update-baseline --model tiny-cnn`" in line


def test_a_sweeps_bad_file_is_one_step_for_its_cases_recording_the_whole_sweep():
    """A sweep's cases share one baseline file: where it cannot be read, one line names the cases, and the
    re-recording covers the sweep (one case alone would write a set of that case). Twin: a model's own bad
    file keeps its own line and command."""
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus, ModelStatus
    from gate.verdict.judge import assemble
    from gate.verdict.types import ModelVerdict

    def refused(name: str, sweep: str | None, path: str) -> ModelVerdict:
        error = RunError(ErrorStatus.BAD_BASELINE, f"baseline `{path}`: truncated")
        return ModelVerdict(name, ModelStatus.ERROR, error, path, True, sweep=sweep,
                            update_command=f"parity-gate update-baseline --model {name}")

    cases = [refused(f"act.{a}", "act", "baselines/act.msgpack.zst") for a in ("relu", "gelu", "silu")]
    models = [*cases, refused("net", None, "baselines/net.msgpack.zst")]
    lines = next_steps(assemble(models, {})).splitlines()[2:]
    assert len(lines) == 2
    assert lines[0].startswith("- `act.relu`, `act.gelu`, `act.silu`: its baseline file cannot judge it")
    assert "`parity-gate update-baseline --model act`" in lines[0] and "--model act.relu" not in lines[0]
    assert lines[1].startswith("- `net`: ") and "`parity-gate update-baseline --model net`" in lines[1]


def test_a_sweeps_bad_file_is_one_failure_line_and_its_matrix_says_every_case_failed():
    """The comment's body says a cause once: the cases that share a bad file share one failure line, and
    the sweep's matrix, none of whose cases ran a runtime, says they failed (never "all ok"). Twin: another
    model's failure keeps its own line."""
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus, ModelStatus
    from gate.render import render_markdown
    from gate.verdict.judge import assemble
    from gate.verdict.types import ModelVerdict

    def refused(name: str, sweep: str | None, path: str) -> ModelVerdict:
        error = RunError(ErrorStatus.BAD_BASELINE, f"baseline `{path}`: truncated")
        return ModelVerdict(name, ModelStatus.ERROR, error, path, True, sweep=sweep,
                            update_command=f"parity-gate update-baseline --model {name}")

    cases = [refused(f"act.{a}", "act", "baselines/act.msgpack.zst") for a in ("relu", "gelu", "silu")]
    text = render_markdown(assemble([*cases, refused("net", None, "baselines/net.msgpack.zst")], {}))
    failures = [line for line in text.splitlines() if line.startswith("- 💥")]
    assert failures == ["- 💥 `act.relu`, `act.gelu`, `act.silu` failed: **BAD\\_BASELINE**: baseline "
                        "`baselines/act.msgpack.zst`: truncated",
                        "- 💥 `net` failed: **BAD\\_BASELINE**: baseline `baselines/net.msgpack.zst`: "
                        "truncated"]
    assert "Sweep <code>act</code>: 3 of 3 cases not ok" in text and "all 3 cases ok" not in text
    assert "| `act.gelu` | 💥 BAD\\_BASELINE |" in text


def test_a_reproduce_command_carries_the_config_its_re_record_names():
    """A config found only through `--config` (ci/gate.toml): the command that reproduces a failure names it,
    as the re-record does; run as printed it would find no configuration. Twin: the default config."""
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus, ModelStatus
    from gate.verdict.next_step import next_step
    from gate.verdict.types import ModelVerdict

    for extra in (" --config ci/gate.toml", ""):
        m = ModelVerdict("conv", ModelStatus.ERROR, RunError(ErrorStatus.BUILD_FAIL, "model `conv`: boom"),
                         "b/conv.msgpack.zst", True,
                         update_command=f"parity-gate update-baseline --model conv{extra}")
        assert next_step(m).command == f"parity-gate check --model conv{extra}"


def test_a_sweeps_cases_that_changed_share_one_step_recording_the_sweep():
    """One change across a sweep: each case's reference moved (at its own first layer). The comment gives one
    step naming the cases, which re-records the sweep; the terminal lists each case, then that step once.
    Twin: a configured model beside them keeps its own step and command."""
    import copy

    from gate.cli.console import failure_lines

    report = raw("real-check-reference-drift")
    base = report["models"][0]
    cases = []
    for case, layer in (("act.relu", "stem.0"), ("act.gelu", "stem.1"), ("act.silu", "stem.0")):
        m = copy.deepcopy(base)
        m.update(name=case, sweep="act", update_command=f"parity-gate update-baseline --model {case}",
                 baseline={"path": "baselines/act.msgpack.zst", "exists": True})
        m["first_regression"]["layer"] = layer
        cases.append(m)
    report["models"] = [*cases, base]
    lines = steps(report)
    assert len(lines) == 2, lines
    assert lines[0].startswith("- `act.relu`, `act.gelu`, `act.silu`: the model changed")
    assert "`parity-gate update-baseline --model act`" in lines[0]
    assert "act.relu`" not in lines[0].split(":", 1)[1]
    assert lines[1].startswith("- `tiny-cnn`: ") and "--model tiny-cnn`" in lines[1]
    text = [line for line in failure_lines(typed(report)) if "next" in line]
    assert len(text) == 2, text
    assert text[0].startswith("    [bold]next (act.relu, act.gelu, act.silu):[/bold]"), text


def test_a_fallback_export_is_said_to_be_torchscripts_and_what_a_trace_keeps():
    """`export_fallback` holds why the default exporter failed: the notice names the exporter that did
    export (never "fell back to dynamo exporter failed") and what a trace of one input keeps."""
    report = raw("pass")
    report["models"][0]["export_fallback"] = "dynamo exporter failed: TorchExportError: data-dependent"
    text = render_markdown(typed(report))
    assert "exported by TorchScript (dynamo exporter failed: TorchExportError: data-dependent)" in text
    assert "keeps only the branches its inputs took" in text and "fell back to" not in text


def test_a_sweep_case_of_its_own_kind_is_re_recorded_alone():
    """A new case beside a case that changed: each step names its own case, never the sweep, whose re-record
    would take the changed case's numbers as they are (a readable set file keeps the cases not named). Twin
    (above): every case of the sweep changed alike, and one step re-records the sweep."""
    import copy

    drift, new = raw("real-check-reference-drift")["models"][0], raw("regressed")["models"][1]
    models = []
    for case, model in (("act.gelu", drift), ("act.silu", new)):
        m = copy.deepcopy(model)
        m.update(name=case, sweep="act", update_command=f"parity-gate update-baseline --model {case}",
                 baseline={"path": "baselines/act.msgpack.zst", "exists": case != "act.silu"})
        models.append(m)
    report = raw("real-check-reference-drift")
    report["models"] = models
    lines = steps(report)
    assert len(lines) == 2, lines
    assert lines[0].startswith("- `act.gelu`: the model changed") and "--model act.gelu`" in lines[0]
    assert lines[1].startswith("- `act.silu`: no baseline yet") and "--model act.silu`" in lines[1]
    assert not any("--model act`" in line or "--model act " in line for line in lines)

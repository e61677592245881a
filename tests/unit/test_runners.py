"""gate.runners: one interface for every provider kind, chosen by kind; statuses that keep the
target's precision; each way a run ends early at its one status (``failed_run``); which providers
run in a worker by default. Real ONNX Runtime, no torch."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gate.config import Isolation, ProviderSpec
from gate.core import device
from gate.core.failure import ModelError
from gate.core.runs import LayerInfo, ModelRun, OnnxSite, ProviderRun
from gate.core.status import ErrorStatus, RunStatus, SkipKind
from gate.core.target import Target
from gate.errors import ConfigError, FormatError
from gate.fingerprint import fingerprint
from gate.formats.results import Bundle
from gate.pipeline.run import is_isolated
from gate.runners.base import Runner, Subject, Unavailable, execute, failed_run
from gate.runners.registry import RUNNERS, nominal_target, runner_for

HEALTHY_S = 300  # a worker's timeout with the margin of a loaded 2-core runner (a cold `import onnxruntime`)


@pytest.mark.parametrize("name, runner, on", [
    ("torch-cpu", "TorchEagerRunner", "cpu"), ("torch-cuda", "TorchEagerRunner", "cuda"),
    ("torch-compile", "TorchCompileRunner", "cpu"), ("torch-compile-cuda", "TorchCompileRunner", "cuda"),
    ("CPUExecutionProvider", "OrtRunner", None), ("TensorrtExecutionProvider", "OrtRunner", None),
])
def test_runner_is_chosen_by_the_providers_kind(name, runner, on):
    spec = ProviderSpec(name)
    assert RUNNERS[spec.kind.runner].endswith(runner) and spec.device == on
    if runner == "OrtRunner":  # the PyTorch runners import torch: checked in the integration tests
        assert type(runner_for(spec)).__name__ == runner


def test_unavailable_provider_is_a_skip_that_keeps_its_precision():
    """TensorRT configured for float16 and missing here: skipped, labelled float16, not float32."""
    spec = ProviderSpec("TensorrtExecutionProvider", precision="float16")
    prun = execute(runner_for(spec), Subject(ModelRun("m")))
    assert (prun.status, prun.reason) == ("skipped", "skipped: TensorrtExecutionProvider not available here")
    assert prun.target == Target("TensorrtExecutionProvider", device.GPU, "float16")
    assert prun.target.label == "gpu:float16" and nominal_target(spec) == prun.target


def add_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"]), helper.make_node("Mul", ["y", "two"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]), helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])],
        value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)


def bundle_run(tmp_path, proto_bytes: bytes | None, latency: bool = False) -> Subject:
    x = np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32)
    run = ModelRun("m")
    y = x.astype(np.float64) + 1
    run.layers = [LayerInfo("add", "Add", fingerprint(y)), LayerInfo("(model)", "M", fingerprint(2 * y)),
                  LayerInfo("gone", "Identity", fingerprint(y))]
    run.onnx_map = {"add": OnnxSite("value", "y"), "(model)": OnnxSite("output", output=0),
                    "gone": OnnxSite("absent", reason="no ONNX node")}
    Bundle(tmp_path).write(run, proto_bytes, [x])
    return Subject(run, tmp_path, latency=latency)


@pytest.mark.parametrize("isolated", [False, True])
def test_onnxruntime_runner_maps_values_to_layers(tmp_path, isolated):
    from gate.pipeline.run import run_provider

    subject = bundle_run(tmp_path, add_model().SerializeToString(), latency=True)
    prun = run_provider(ProviderSpec("CPUExecutionProvider"), subject, Isolation(timeout_s=HEALTHY_S), isolated)
    assert prun.status == "ok", prun.reason
    assert prun.target == Target("CPUExecutionProvider", device.cpu_class())
    assert prun.layers["add"].status == "ok" and prun.layers["add"].err == 0.0
    assert prun.layers["(model)"].err == 0.0 and prun.latency_ms > 0
    assert (prun.layers["gone"].status, prun.layers["gone"].reason) == ("absent", "no ONNX node")
    assert prun.placement["by_provider"] == {"CPUExecutionProvider": 2}


@pytest.mark.parametrize("isolated", [False, True])
def test_latency_is_timed_only_when_something_reads_it(tmp_path, isolated):
    from gate.pipeline.run import run_provider

    subject = bundle_run(tmp_path, add_model().SerializeToString())
    assert subject.timing_runs == 0
    prun = run_provider(ProviderSpec("CPUExecutionProvider"), subject, Isolation(timeout_s=HEALTHY_S), isolated)
    assert prun.status == "ok" and prun.latency_ms is None and prun.latency_p90_ms is None
    subject.repeats = 3  # repeats alone asks for timed runs, with their p90
    prun = run_provider(ProviderSpec("CPUExecutionProvider"), subject, Isolation(timeout_s=HEALTHY_S), isolated)
    assert prun.latency_ms > 0 and prun.latency_p90_ms >= prun.latency_ms


@pytest.mark.parametrize("isolated", [False, True])
def test_missing_or_broken_model_is_a_status_of_the_provider(tmp_path, isolated):
    from gate.pipeline.run import run_provider

    spec = ProviderSpec("CPUExecutionProvider", precision="float16")
    prun = run_provider(spec, bundle_run(tmp_path / "a", None), Isolation(timeout_s=HEALTHY_S), isolated)
    assert (prun.status, prun.error_status, prun.reason) == ("error", "EXPORT_FAIL", "no ONNX model (export failed)")
    assert prun.target.precision == "float16"
    prun = run_provider(spec, bundle_run(tmp_path / "b", b"not a protobuf"), Isolation(timeout_s=HEALTHY_S), isolated)
    assert (prun.status, prun.error_status) == ("error", "LOAD_FAIL") and "model `m`" in prun.reason


def test_which_providers_run_in_a_worker():
    on = Isolation()
    assert is_isolated(ProviderSpec("CPUExecutionProvider"), on)
    assert is_isolated(ProviderSpec("torch-cuda"), on) and is_isolated(ProviderSpec("torch-compile-cuda"), on)
    assert not is_isolated(ProviderSpec("torch-cpu"), on)  # in-process: the very instance exported
    assert not is_isolated(ProviderSpec("CPUExecutionProvider"), Isolation(enabled=False))
    assert is_isolated(ProviderSpec("torch-cpu", isolated=True), on)
    assert not is_isolated(ProviderSpec("torch-cuda", isolated=False), on)


TARGET = Target("CPUExecutionProvider", "cpu", "float16")


@pytest.mark.parametrize("exc, status, error_status, reason", [
    (Unavailable("skipped: X not available here"), RunStatus.SKIPPED, None, "skipped: X not available here"),
    (ModelError("no ONNX model (export failed)", ErrorStatus.EXPORT_FAIL), RunStatus.ERROR, ErrorStatus.EXPORT_FAIL,
     "no ONNX model (export failed)"),
    (ModelError("m: failed"), RunStatus.ERROR, ErrorStatus.INFER_FAIL, "m: failed"),
    (MemoryError(), RunStatus.ERROR, ErrorStatus.CRASH, "CPUExecutionProvider ran out of memory"),
    (FormatError("bundle `b`: cannot read inputs.npz"), RunStatus.ERROR, ErrorStatus.LOAD_FAIL,
     "bundle `b`: cannot read inputs.npz"),
])
def test_an_exception_becomes_one_status(exc, status, error_status, reason):
    prun = failed_run(exc, TARGET)
    assert (prun.status, prun.error_status, prun.reason, prun.target) == (status, error_status, reason, TARGET)
    assert prun.skip == (SkipKind.UNAVAILABLE if status == RunStatus.SKIPPED else None)


@pytest.mark.parametrize("exc, error_status, reason", [
    (MemoryError(), ErrorStatus.CRASH, "model `m`: CPUExecutionProvider ran out of memory (budget 3072 MiB)"),
    (ConfigError("parity-gate.toml: no model `m`"), ErrorStatus.LOAD_FAIL, "model `m`: parity-gate.toml: no model `m`"),
    (ModelError("model `m`: rebuilt otherwise", ErrorStatus.BUILD_FAIL), ErrorStatus.BUILD_FAIL,
     "model `m`: rebuilt otherwise"),  # a ModelError names what it needs itself
])
def test_a_workers_failure_names_the_model_and_its_budget(exc, error_status, reason):
    prun = failed_run(exc, TARGET, "model `m`", 3072)
    assert (prun.status, prun.error_status, prun.reason) == ("error", error_status, reason)


class Failing(Runner):
    """A runner whose run ends in ``exc``."""

    def __init__(self, exc: BaseException):
        super().__init__(ProviderSpec("CPUExecutionProvider", precision="float16"))
        self.exc, self.closed = exc, False

    def target(self) -> Target:
        return TARGET

    def run(self) -> ProviderRun:
        raise self.exc

    def close(self) -> None:
        self.closed = True
        super().close()


@pytest.mark.parametrize("exc", [Unavailable("skipped: gone"), ModelError("boom", ErrorStatus.LOAD_FAIL),
                                 MemoryError()])
def test_execute_turns_a_runs_failure_into_its_status(exc):
    runner = Failing(exc)
    assert execute(runner, Subject(ModelRun("m"))) == failed_run(exc, TARGET) and runner.closed


def test_a_bug_keeps_its_traceback():
    """Neither an exception that is no failure of the model (a bug) nor a GateError that is no
    ModelError in-process becomes a status: both reach the user."""
    for exc in (ValueError("a bug"), FormatError("bundle `b`: unreadable")):
        runner = Failing(exc)
        with pytest.raises(type(exc)):
            execute(runner, Subject(ModelRun("m")))
        assert runner.closed
    with pytest.raises(ValueError, match="a bug"):
        failed_run(ValueError("a bug"), TARGET)

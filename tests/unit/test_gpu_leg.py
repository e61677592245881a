"""gate.verdict.gpu_leg: a run whose GPU providers were all unavailable fails (exit 3) with the
fix, unless allowed; CPU-only runs, partly available GPUs and absent matrix legs are unaffected."""

from __future__ import annotations

from gate.core.runs import ProviderRun
from gate.core.status import ErrorStatus, Verdict
from gate.core.target import Target
from gate.formats.results import merge
from gate.render.next_steps import next_steps
from gate.verdict.gpu_leg import fail_missing_gpu, missing_gpu
from gate.verdict.judge import assemble, model_verdict
from tests.support.verdicts import baseline, entry, run, runtime, spec


def skipped(name: str, device: str = "gpu") -> ProviderRun:
    return ProviderRun.skipped(Target(name, device), f"skipped: {name} not available here")


def verdict(*pruns: ProviderRun, allow: bool = False, recorded: tuple[str, ...] = ("CUDAExecutionProvider",
                                                                                  "TensorrtExecutionProvider",
                                                                                  "torch-cuda")):
    """``recorded``: the GPU providers the baseline has an entry for (made on a GPU runner)."""
    r = run()
    r.providers = list(pruns)
    entries = [entry(), *(entry(name, device="cuda-sm90-A100") for name in recorded)]
    mv = model_verdict(spec(), fail_missing_gpu(r, allow), baseline(*entries), "b.msgpack.zst", "update")
    return mv, assemble([mv], {})


def test_all_gpu_providers_unavailable_fails_with_the_fix():
    mv, report = verdict(runtime(), skipped("CUDAExecutionProvider"), skipped("TensorrtExecutionProvider"),
                         skipped("torch-cuda"))
    assert report.verdict == "error" and report.exit_code == Verdict.ERROR.exit_code == 3
    gpu = [p for p in mv.providers if p.name != "CPUExecutionProvider" and p.role == "runtime"]
    assert [(p.status, p.error_status) for p in gpu] == [("error", ErrorStatus.NO_GPU)] * 3
    reason = gpu[0].reason
    assert reason.startswith("no GPU provider could run here (CUDAExecutionProvider, TensorrtExecutionProvider, "
                             "torch-cuda not available), so this run checked no GPU.")
    assert "CUDAExecutionProvider: install onnxruntime-gpu instead of onnxruntime (action input onnxruntime: gpu)" in reason
    assert "torch-cuda: install a CUDA build of torch" in reason and "allow-missing-gpu = true" in reason
    assert "CUDAExecutionProvider: install onnxruntime-gpu" in next_steps(report)


def test_a_gpu_provider_the_baseline_never_recorded_is_named_as_such_and_recorded_where_it_runs():
    mv, report = verdict(runtime(), skipped("CUDAExecutionProvider"), recorded=())
    assert report.exit_code == 3 and mv.unrecorded == ["CUDAExecutionProvider"]
    assert "cannot run here and has no baseline entry yet: record it where it runs, `update --provider " \
           "CUDAExecutionProvider`" in next_steps(report)
    allowed, report = verdict(runtime(), skipped("CUDAExecutionProvider"), allow=True, recorded=())
    assert report.verdict == "pass" and allowed.unrecorded == ["CUDAExecutionProvider"]
    assert verdict(runtime(), skipped("CUDAExecutionProvider"), allow=True)[0].unrecorded == []


def test_allowing_a_missing_gpu_keeps_the_skips_and_passes():
    mv, report = verdict(runtime(), skipped("CUDAExecutionProvider"), allow=True)
    assert report.verdict == "pass"
    assert [p.status for p in mv.providers if p.name == "CUDAExecutionProvider"] == ["skipped"]


def test_one_gpu_provider_that_ran_is_enough():
    mv, report = verdict(runtime(), runtime("CUDAExecutionProvider", device="cuda-sm90-H100"),
                         skipped("TensorrtExecutionProvider"))
    assert report.verdict == "regressed"  # no baseline entry for this GPU yet; no error
    assert [p.status for p in mv.providers if p.name == "CUDAExecutionProvider"] == ["no-baseline"]
    assert [p.status for p in mv.providers if p.name == "TensorrtExecutionProvider"] == ["skipped"]


def test_cpu_only_runs_and_cpu_skips_are_unaffected():
    assert missing_gpu([runtime(), skipped("OpenVINOExecutionProvider", "x86_64-avx2")]) == []
    assert verdict(runtime(), skipped("OpenVINOExecutionProvider", "x86_64-avx2"))[1].verdict == "pass"


def test_a_gpu_provider_that_failed_is_its_own_error_not_a_missing_gpu():
    failed = ProviderRun.failed(Target("CUDAExecutionProvider", "cuda-sm90-H100"), "LOAD_FAIL", "libcudnn.so.9")
    assert missing_gpu([failed, skipped("TensorrtExecutionProvider")]) == []


def test_merge_keeps_the_gpu_runners_run_over_another_runners_skip():
    from tests.unit.test_results import make_run

    cpu_leg, gpu_leg = make_run(), make_run(device="cuda-sm90-NVIDIA_H100")
    cpu_leg.providers.append(skipped("CUDAExecutionProvider"))
    gpu_leg.providers[0].target = Target("CUDAExecutionProvider", "cuda-sm90-NVIDIA_H100")
    for order in ([cpu_leg, gpu_leg], [gpu_leg, cpu_leg]):
        (merged,) = merge([make_copy(r) for r in order])
        cuda = [p for p in merged.providers if p.name == "CUDAExecutionProvider"]
        assert [(p.status, p.target.device_class) for p in cuda] == [("ok", "cuda-sm90-NVIDIA_H100")]
        assert missing_gpu(merged.providers) == []


def make_copy(r):
    import copy

    return copy.deepcopy(r)


def test_a_required_gpu_provider_keeps_its_own_message():
    r = run()
    r.providers = [runtime(), skipped("CUDAExecutionProvider"), skipped("torch-cuda")]
    fail_missing_gpu(r, False, required=("CUDAExecutionProvider",))
    assert [(p.name, p.status) for p in r.providers[1:]] == [("CUDAExecutionProvider", "skipped"), ("torch-cuda", "error")]

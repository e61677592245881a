"""Worker isolation: a crashing, hanging or memory-hungry provider becomes a status; the
other models and providers still report. Real worker processes, real ONNX Runtime."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gate import commands
from gate.config import Isolation, ProviderSpec, load_config
from gate.core.progress import DETAIL
from gate.core.reuse import Shipped
from gate.core.runs import LayerInfo, ModelRun, OnnxSite
from gate.core.status import CacheState, Stage
from gate.core.target import Target
from gate.env import CACHE_DIR
from gate.fingerprint import fingerprint
from gate.formats.results import RUN, Bundle
from gate.pipeline.prepare import add_graph_digest, prepare
from gate.pipeline.run import run_model, run_provider
from gate.pipeline.stages import ReusePolicy
from gate.runners import ort_session
from gate.runners.base import Subject
from gate.runners.isolation import Spare, job_for, run_isolated

ROOT = Path(__file__).resolve().parents[2]
# A worker expected to finish gets the margin a loaded 2-core CI runner needs: a cold `import
# onnxruntime` or torch there takes tens of seconds. Only a worker that hangs (the hook) gets a short
# timeout, and only where it is the sole worker of its run, so no healthy worker races it.
HEALTHY_S = 300
HUNG_S = 5


@pytest.fixture
def hooked(monkeypatch):
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "worker_hooks:fault")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))

    def check(kind: str, isolation: Isolation, models: tuple[str, ...] | None = None) -> dict:
        monkeypatch.setenv("PARITY_GATE_TEST_FAULT", kind)
        cfg = dataclasses.replace(load_config(ROOT / "pyproject.toml"), isolation=isolation)
        chosen = tuple(m for m in cfg.models if models is None or m.name in models)
        return commands.check(cfg, chosen, cfg.providers).to_dict()

    return check


@pytest.mark.parametrize("kind, status, words", [
    ("abort", "CRASH", "SIGABRT"),
    ("alloc", "CRASH", "out of memory"),
])
def test_faulty_provider_is_a_status_and_others_still_report(hooked, kind, status, words):
    report = hooked(kind, Isolation(timeout_s=HEALTHY_S, memory_mb=3072))
    cnn, tf = report["models"]
    ort = next(p for p in cnn["providers"] if p["name"] == "CPUExecutionProvider")
    assert ort["status"] == "error" and ort["error_status"] == status, ort
    assert words in ort["reason"]
    assert report["verdict"] == "error"
    # The same model's torch providers, and the other model entirely, still pass.
    assert all(p["status"] == "pass" for p in cnn["providers"] if p["name"] != "CPUExecutionProvider")
    assert tf["status"] == "pass" and all(p["status"] == "pass" for p in tf["providers"])


def test_hung_provider_is_a_timeout(hooked):
    """The hung worker is the only one (the model's torch provider runs in-process)."""
    report = hooked("hang", Isolation(timeout_s=HUNG_S), models=("tiny-cnn",))
    (cnn,) = report["models"]
    ort = next(p for p in cnn["providers"] if p["name"] == "CPUExecutionProvider")
    assert (ort["status"], ort["error_status"]) == ("error", "TIMEOUT"), ort
    assert ort["reason"] == f"model `tiny-cnn`: CPUExecutionProvider did not finish within {HUNG_S} s"
    assert report["verdict"] == "error"
    assert all(p["status"] == "pass" for p in cnn["providers"] if p["name"] != "CPUExecutionProvider")


def test_after_a_hung_worker_is_killed_the_next_one_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "worker_hooks:fault")
    monkeypatch.setenv("PARITY_GATE_TEST_FAULT", "hang")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    run, _ = chain_bundle(tmp_path, 3, "tiny-cnn")  # the model the hook hangs
    job = job_for(ProviderSpec("CPUExecutionProvider"), Subject(run, tmp_path), Isolation(), None)
    target = Target("CPUExecutionProvider", "cpu")
    hung = run_isolated(job, target, HUNG_S)
    assert (hung.status, hung.error_status) == ("error", "TIMEOUT")
    monkeypatch.delenv("PARITY_GATE_TEST_FAULT")
    healthy = run_isolated(job, target, HEALTHY_S)
    assert healthy.status == "ok" and all(pl.status == "ok" for pl in healthy.layers.values())


def chain_model(n: int) -> tuple[onnx.ModelProto, list[str]]:
    """x -> Add -> Add -> ... (n nodes): n intermediate values to mark."""
    nodes, names = [], []
    prev = "x"
    for i in range(n):
        out = f"v{i}"
        nodes.append(helper.make_node("Add", [prev, "one"], [out]))
        names.append(out)
        prev = out
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [64])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])],
        value_info=[helper.make_tensor_value_info(v, TensorProto.FLOAT, [64]) for v in names[:-1]])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), names


def chain_bundle(folder: Path, n: int, name: str = "chain") -> tuple[ModelRun, list[str]]:
    """A bundle of ``chain_model(n)`` with its reference run: layer ``add{i}`` is value ``v{i}``."""
    proto, names = chain_model(n)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    run = ModelRun(name)
    run.layers = [LayerInfo(f"add{i}", "Add", fingerprint(x.astype(np.float64) + i + 1)) for i in range(len(names))]
    run.onnx_map = {f"add{i}": OnnxSite("value", v) for i, v in enumerate(names)}
    Bundle(folder).write(run, proto.SerializeToString(), [x])
    return run, names


def test_large_results_come_back_without_deadlock(tmp_path):
    """3,000 fingerprints (~7 MB of result, 100x a pipe buffer) travel back from the worker."""
    run, _ = chain_bundle(tmp_path, 3000)
    prun = run_provider(ProviderSpec("CPUExecutionProvider"), Subject(run, tmp_path), Isolation(timeout_s=HEALTHY_S),
                        isolated=True)
    assert prun.status == "ok", prun.reason
    assert len(prun.layers) == 3000 and all(pl.status == "ok" for pl in prun.layers.values())
    assert max(pl.err for pl in prun.layers.values()) < 1e-6


def test_a_bundle_the_worker_cannot_read_is_a_load_failure(tmp_path):
    run, _ = chain_bundle(tmp_path, 3)
    (tmp_path / RUN).write_bytes(b"not a result file")
    job = job_for(ProviderSpec("CPUExecutionProvider"), Subject(run, tmp_path), Isolation(), None)
    prun = run_isolated(job, Target("CPUExecutionProvider", "cpu"), HEALTHY_S)
    assert (prun.status, prun.error_status) == ("error", "LOAD_FAIL"), prun.reason
    assert prun.reason.startswith("model `chain`: result file `") and "\n" not in prun.reason


def test_capture_memory_budget_splits_marked_outputs(tmp_path):
    """With a tiny capture budget the graph runs in segments; results are the same."""
    proto, names = chain_model(50)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    sizes = {v: 256 for v in names}
    cpu = ort_session.SessionSpec("CPUExecutionProvider")
    whole = ort_session.run(proto, cpu, [x], names, "chain", value_bytes=sizes)
    parts = ort_session.run(proto, cpu, [x], names, "chain", capture_bytes=1024, value_bytes=sizes)
    assert len(ort_session.chunks(names, sizes, 1024)) == 13
    assert parts.peak_capture_bytes == 1024 and whole.peak_capture_bytes == 50 * 256
    assert (parts.segments, whole.segments) == (13, 0)
    assert all(np.array_equal(whole.values[v].sketch, parts.values[v].sketch) for v in names)


def test_a_workers_capture_progress_reaches_the_parent_and_other_output_does_not(tmp_path, monkeypatch):
    """Segment by segment, by layer name, while the worker runs; its other stdout and a stderr past a
    pipe's buffer neither block it nor show up as progress."""
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "worker_hooks:chatty")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    run, names = chain_bundle(tmp_path, 50)
    heard: list[str] = []
    subject = Subject(run, tmp_path, detail=heard.append, capture_bytes=1024)
    job = job_for(ProviderSpec("CPUExecutionProvider"), subject, Isolation(), None)
    prun = run_isolated(job, Target("CPUExecutionProvider", "cpu"), HEALTHY_S, subject.detail)
    assert prun.status == "ok" and all(pl.status == "ok" for pl in prun.layers.values())
    last = [names.index(part[-1]) for part in ort_session.chunks(names, {v: 256 for v in names}, 1024)]
    assert heard == [f"{DETAIL}segment {k + 1}/13, to add{i}" for k, i in enumerate(last)]


def torch_config(tmp_path: Path, provider: str, factory: str = "examples.zoo:tiny_cnn") -> Path:
    path = tmp_path / "parity-gate.toml"
    path.write_text(f'baseline-dir = "{(ROOT / "baselines").as_posix()}"\nproviders = [{provider}]\n'
                    f'[[models]]\nname = "tiny-cnn"\nfactory = "{factory}"\n'
                    'inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]\n')
    return path


def test_torch_provider_in_a_worker_measures_what_it_measures_in_process(tmp_path, monkeypatch):
    """(The default timeout, 600 s, gives the worker's cold torch import its margin.)"""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the worker imports the example's factory
    rows = {}
    for isolated in ("false", "true"):
        cfg = load_config(torch_config(tmp_path, f'{{ name = "torch-cpu", isolated = {isolated} }}'))
        report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
        assert report["verdict"] == "pass", report["first_regression"]
        rows[isolated] = [(r["layer"], r["value"]) for r in report["models"][0]["providers"][1]["layers"]]
    assert rows["true"] == rows["false"] and len(rows["true"]) > 20  # the same model, rebuilt and verified


def test_hung_torch_provider_is_a_timeout(tmp_path, monkeypatch):
    """A hung kernel (the hook sleeps in the worker) does not take the job down."""
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "worker_hooks:fault")
    monkeypatch.setenv("PARITY_GATE_TEST_FAULT", "hang")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), str(ROOT)]))
    cfg = dataclasses.replace(load_config(torch_config(tmp_path, '{ name = "torch-cpu", isolated = true }')),
                              isolation=Isolation(timeout_s=HUNG_S))  # the only worker of the run
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    (torch_cpu,) = [p for p in report["models"][0]["providers"] if p["role"] == "runtime"]
    assert (torch_cpu["status"], torch_cpu["error_status"]) == ("error", "TIMEOUT")
    assert f"did not finish within {HUNG_S} s" in torch_cpu["reason"]
    assert report["models"][0]["providers"][0]["status"] == "pass"  # the reference ran in the parent


def test_worker_refuses_a_model_its_factory_builds_differently(tmp_path, monkeypatch):
    (tmp_path / "drifting.py").write_text(
        "import os\n"
        "from examples import zoo\n\n"
        "def cnn():\n"
        "    m = zoo.tiny_cnn()\n"
        "    if os.environ.get('PARITY_GATE_IN_WORKER'):\n"  # built again in the worker: other weights
        "        m.stem[0].weight.data.mul_(1.0001)\n"
        "    return m\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "worker_flag:mark")
    (tmp_path / "worker_flag.py").write_text("import os\n\ndef mark(job):\n    os.environ['PARITY_GATE_IN_WORKER'] = '1'\n")
    cfg = load_config(torch_config(tmp_path, '{ name = "torch-cpu", isolated = true }', "drifting:cnn"))
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    (torch_cpu,) = [p for p in report["models"][0]["providers"] if p["role"] == "runtime"]
    assert (torch_cpu["status"], torch_cpu["error_status"]) == ("error", "BUILD_FAIL")
    assert "other weights than the one exported" in torch_cpu["reason"] and "isolated = false" in torch_cpu["reason"]


def test_capture_chunks_are_as_even_as_the_fewest_runs_allow():
    sizes = {"a": 700, "b": 700, "c": 700}  # two runs whichever way: 1,400 + 700 is as even as it gets
    assert sorted(map(len, ort_session.chunks(list(sizes), sizes, 2048))) == [1, 2]
    sizes = {f"v{i}": 100 for i in range(21)}  # 2,100 bytes under 2,048: two runs, 1,000 and 1,100
    parts = ort_session.chunks(list(sizes), sizes, 2048)
    assert [len(p) for p in parts] == [10, 11] and sum(parts, []) == list(sizes)
    sizes = {"small": 10, "huge": 5000, "tail": 10}  # a value past the budget runs alone
    assert ort_session.chunks(list(sizes), sizes, 100) == [["small"], ["huge"], ["tail"]]
    assert ort_session.chunks(list(sizes), sizes, None) == [list(sizes)]
    assert ort_session.chunks([], {}, 100) == []


# a spare: a worker started before its job, its job's path read from its stdin -----------------------


def _chain_run(tmp_path, spare=None):
    run, _ = chain_bundle(tmp_path, 20)
    return run_provider(ProviderSpec("CPUExecutionProvider"), Subject(run, tmp_path),
                        Isolation(timeout_s=HEALTHY_S), isolated=True, spare=spare)


def test_a_spare_runs_its_job_as_a_worker_started_for_it(tmp_path):
    (tmp_path / "fresh").mkdir()
    (tmp_path / "spare").mkdir()
    fresh = _chain_run(tmp_path / "fresh")
    spare = Spare()
    try:
        waited = _chain_run(tmp_path / "spare", spare)
        assert spare.claim() is None  # claimed once
    finally:
        spare.close()
    assert (fresh.status, waited.status) == ("ok", "ok"), (fresh.reason, waited.reason)
    assert {n: pl.err for n, pl in waited.layers.items()} == {n: pl.err for n, pl in fresh.layers.items()}


def test_a_spare_never_given_a_job_ends_when_closed(tmp_path):
    spare = Spare()
    proc = spare._proc
    spare.close()
    assert proc is not None and proc.returncode == 0


def test_a_spare_that_ended_before_its_job_is_replaced_by_a_fresh_worker(tmp_path):
    spare = Spare()
    proc = spare._proc
    assert proc is not None
    proc.kill()
    proc.wait()
    prun = _chain_run(tmp_path, spare)
    assert prun.status == "ok", prun.reason


def test_the_graph_digest_reaches_the_run_after_the_providers_even_when_one_crashes(tmp_path, monkeypatch):
    """A run waits for its shipped graph's digest (hashed on a thread since the export wrote it) only
    after the providers (``prepare.add_graph_digest``): it is on the run when the worker aborts, the same as a
    clean run's (whose graph comes from the store the first run wrote), and said against the baseline."""
    monkeypatch.setenv(CACHE_DIR, str(tmp_path / "store"))
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "worker_hooks:fault")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    cfg = load_config(torch_config(tmp_path, '"CPUExecutionProvider"'))
    runs = {}
    for kind in ("abort", "none"):
        monkeypatch.setenv("PARITY_GATE_TEST_FAULT", kind)
        runs[kind] = run_model(cfg, cfg.models[0], cfg.providers, plan=ReusePolicy.for_check().plan(None))
    crashed, clean = runs["abort"], runs["none"]
    assert crashed.providers[0].status == "error" and clean.providers[0].status == "ok"
    assert [s.state for s in clean.reuse.stages if s.stage == Stage.EXPORT] == [CacheState.HIT]
    assert crashed.meta.graph_digest is not None and len(crashed.meta.graph_digest) == 64
    assert crashed.meta.graph_digest == clean.meta.graph_digest
    assert crashed.reuse.shipped == clean.reuse.shipped == Shipped(clean.meta.graph_digest, None)
    plan = ReusePolicy.for_check().plan(None)
    prepared = prepare(cfg, cfg.models[0], plan=plan, digest=False)  # as ``run_model`` prepares
    assert prepared.run.meta.graph_digest is None and prepared.run.reuse.shipped is None
    add_graph_digest(prepared, plan)
    assert prepared.run.meta.graph_digest == clean.meta.graph_digest
    assert prepared.run.reuse.shipped == Shipped(clean.meta.graph_digest, None)
    plan.finish()

"""The gate on its own example models: real exports, real ONNX Runtime sessions, the
committed baselines, and the CLI as a process.

Faults are injected into the example models (tests/e2e/faults.py); the gate must fail and
name the injected module as the first regression. Benign changes must pass.

The committed runtime entries were recorded on x86_64, and a CPU class stands in only for its own
architecture: on any other machine they judge no runtime (`no-baseline`). Tests that expect `pass`
take the `baselines` fixture: the committed folder where its entries judge this machine, else a
copy with this machine's runtime entries recorded beside the committed reference
(tests/support/this_machine.py).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.core.device import cpu_class
from gate.core.target import Target
from gate.formats.baseline import decode_baseline, encode_baseline, read_document
from tests.conftest import ROOT, run_cli
from tests.support.this_machine import judging_here, unjudged

sys.path.insert(0, str(Path(__file__).parent))
import faults  # noqa: E402

EXAMPLE_INPUTS = {
    "tiny-cnn": '[{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]',
    "tiny-transformer": '[{ name = "x", shape = [2, 8, 16], dtype = "float32" }]',
}


def write_config(tmp: Path, model: str, factory: str, baseline_dir: Path = ROOT / "baselines",
                 providers: str = '["torch-cpu", "CPUExecutionProvider"]', extra: str = "") -> Path:
    path = tmp / "parity-gate.toml"
    shutil.copy(Path(faults.__file__), tmp / "faults.py")
    path.write_text(
        f'baseline-dir = "{baseline_dir.as_posix()}"\nproviders = {providers}\n\n'
        f'[[models]]\nname = "{model}"\nfactory = "{factory}"\ninputs = {EXAMPLE_INPUTS[model]}\n{extra}'
    )
    return path


def check(config: Path) -> dict:
    cfg = load_config(config)
    return commands.check(cfg, cfg.models, cfg.providers).to_dict()


@pytest.fixture(scope="module")
def baselines(tmp_path_factory) -> Path:
    """The committed baselines where their entries judge this machine's runtimes (x86_64: the
    tests check against exactly what the repository commits); elsewhere a copy of them with this
    machine's runtime entries recorded beside the committed reference."""
    cfg = load_config(ROOT / "pyproject.toml")
    if not unjudged(cfg):
        return ROOT / "baselines"
    return judging_here(cfg, cfg.models, tmp_path_factory.mktemp("here") / "baselines")


def assert_runtimes_lack_a_baseline(report: dict, missing: dict[str, list[str]]) -> None:
    """What a check says where no entry judges the runtimes in ``missing``: the reference still
    passes against the baseline, each such runtime is `no-baseline` with the command that creates
    its entry, and nothing is a regression (exit 1 all the same: a missing baseline counts)."""
    assert report["verdict"] == "regressed" and report["first_regression"] is None, report["first_regression"]
    assert {m["name"] for m in report["models"]} == set(missing)
    for model in report["models"]:
        assert model["status"] == "no-baseline" and model["error"] is None
        reference, *runtimes = model["providers"]
        assert (reference["role"], reference["precision"], reference["status"]) == ("reference", "float64", "pass")
        assert reference["layers"] and {r["status"] for r in reference["layers"]} == {"pass"}
        assert sorted(p["name"] for p in runtimes if p["status"] == "no-baseline") == sorted(missing[model["name"]])
        for runtime in runtimes:
            if runtime["status"] == "no-baseline":
                assert f"`{model['update_command']} --provider {runtime['name']}`" in runtime["reason"]
                assert runtime["device"] in runtime["reason"]
            else:
                assert runtime["status"] == "pass"


def test_examples_pass_against_committed_baselines(baselines):
    cfg = load_config(ROOT / "pyproject.toml")
    missing = unjudged(cfg)
    if missing:  # not x86_64: the committed baselines judge the reference, and no runtime
        assert_runtimes_lack_a_baseline(commands.check(cfg, cfg.models, cfg.providers).to_dict(), missing)
        cfg = replace(cfg, baseline_dir=baselines)
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass", json.dumps(report["first_regression"])
    names = [m["name"] for m in report["models"]]
    assert names == ["tiny-cnn", "tiny-transformer"]
    cnn = report["models"][0]
    ort = next(p for p in cnn["providers"] if p["name"] == "CPUExecutionProvider")
    rows = {r["layer"]: r for r in ort["layers"]}
    # BatchNorm folded into the conv: the conv has no value of its own, the BN row carries the fused output.
    assert rows["block1.conv1"]["status"] == "folded"
    assert rows["block1.bn1"]["status"] == "pass"
    # The ReLU module runs twice per block; both calls are rows. Containers are rows too.
    assert {"block1.relu", "block1.relu#2", "block1", "(model)"} <= set(rows)
    tf = {r["layer"] for p in report["models"][1]["providers"] for r in p["layers"]}
    assert {"blocks.1.attn[0]", "blocks.1.attn[1]", "blocks.0.attn.merge"} <= tf


@pytest.mark.parametrize("fault", sorted(faults.INJECTED))
def test_injected_fault_is_caught_at_its_layer(tmp_path, fault):
    """Against the committed baselines on every machine: each fault changes the model, which the
    float64 reference shows against the committed reference (architecture-independent), whether
    or not a committed runtime entry judges this machine's runtimes."""
    model, layer = faults.INJECTED[fault]
    report = check(write_config(tmp_path, model, f"faults:{fault}"))
    assert report["verdict"] == "regressed"
    first = report["first_regression"]
    assert first["model"] == model
    assert first["layer"] == layer, first
    # A change of the model moves the float64 reference: reported as such, not blamed on a runtime.
    assert first["provider"] == "torch-cpu" and first["precision"] == "float64"
    assert first["check"] in ("reference-drift", "nonfinite")
    if fault == "cnn_nan":
        assert first["check"] == "nonfinite" and "NaN" in first["message"]


@pytest.mark.parametrize("factory", ["faults:cnn_relu_not_inplace", "faults:cnn_reordered"])
def test_benign_refactor_passes(tmp_path, factory, baselines):
    report = check(write_config(tmp_path, "tiny-cnn", factory, baseline_dir=baselines))
    assert report["verdict"] == "pass", report["first_regression"]


def test_thread_counts_changed_pass(tmp_path, monkeypatch, baselines):
    monkeypatch.setenv("PARITY_GATE_THREADS", "1")
    try:
        report = check(write_config(tmp_path, "tiny-transformer", "examples.zoo:tiny_transformer",
                                    baseline_dir=baselines))
    finally:
        import torch

        torch.set_num_threads(2)
    assert report["verdict"] == "pass", report["first_regression"]


def test_runtime_regression_is_blamed_on_the_runtime(tmp_path, baselines):
    """Baseline a runtime with a smaller error than it has now: only that runtime regresses."""
    base = tmp_path / "baselines"
    base.mkdir()
    doc = read_document(baselines / "tiny-cnn.msgpack.zst")
    for entry in doc["providers"]["CPUExecutionProvider"].values():
        for name, layer in entry["layers"].items():
            if name == "block2.bn1" and layer["err"] is not None:
                layer["err"] = layer["err"] / 100
    (base / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    # The default floor (1e-6) would absorb this; a per-layer override (glob) tightens it. Only the
    # EP runs: torch-cpu's own error at block2.bn1 sits at half its tightened limit, which another
    # CPU's float32 rounding could cross.
    extra = 'layer-tolerances = [{ layers = "block2.bn*", floor = 1e-9 }]\n'
    report = check(write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=base, extra=extra,
                                providers='["CPUExecutionProvider"]'))
    first = report["first_regression"]
    assert report["verdict"] == "regressed"
    assert (first["provider"], first["layer"], first["check"]) == ("CPUExecutionProvider", "block2.bn1", "error-growth")
    assert first["value"] > first["threshold"]


def test_user_flow_update_then_check_then_regress(tmp_path):
    """A user's repository: update-baseline writes the file, check passes, a numeric change fails."""
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=Path("baselines"))
    # The factory lives in the repo root; the config's folder is on sys.path, so copy the example.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "baselines" / "tiny-cnn.msgpack.zst").is_file()
    assert "new baseline" in proc.stdout
    proc = run_cli("check", "--json", "report.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("PASSED")
    config.write_text(config.read_text().replace("examples.zoo:tiny_cnn", "faults:cnn_bn_eps"))
    proc = run_cli("check", "--json", "report.json", cwd=tmp_path)
    assert proc.returncode == 1
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("FAILED") and "block1.bn2" in last and "torch-cpu" in last
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["first_regression"]["layer"] == "block1.bn2"


def test_missing_baseline_fails_and_says_how_to_create_it(tmp_path):
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "none")
    report = check(config)
    assert report["verdict"] == "regressed"
    assert report["models"][0]["status"] == "no-baseline"
    assert "parity-gate update-baseline --model tiny-cnn" in report["models"][0]["message"]


def _foreign_copy(dest: Path) -> Path:
    """The committed tiny-cnn baseline with its runtime entries labelled for a CPU class of
    another architecture than this machine's: what an Arm runner finds in this repository."""
    foreign = "x86_64-avx2" if Target("any", cpu_class()).architecture == "aarch64" else "aarch64"
    doc = read_document(ROOT / "baselines" / "tiny-cnn.msgpack.zst")
    for provider, classes in doc["providers"].items():
        (entry,) = classes.values()
        doc["providers"][provider] = {foreign: entry}
    dest.mkdir()
    (dest / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    return dest


def test_runtimes_of_another_architecture_are_no_baseline_here(tmp_path):
    """What every runtime gets on a machine the committed entries cannot judge, on every machine:
    the reference passes against the baseline, the runtimes are `no-baseline` with the command."""
    cfg = load_config(write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn",
                                   baseline_dir=_foreign_copy(tmp_path / "foreign")))
    missing = unjudged(cfg)
    assert missing == {"tiny-cnn": ["torch-cpu", "CPUExecutionProvider"]}
    assert_runtimes_lack_a_baseline(commands.check(cfg, cfg.models, cfg.providers).to_dict(), missing)


def test_entries_recorded_here_judge_this_machine_beside_the_committed_reference(tmp_path):
    """The `baselines` fixture's copy, made from baselines no entry of which judges this machine:
    the committed reference is kept, this machine's runtime entries are added, and check passes."""
    cfg = load_config(write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn",
                                   baseline_dir=_foreign_copy(tmp_path / "foreign")))
    here = judging_here(cfg, cfg.models, tmp_path / "here")
    before, after = (read_document(d / "tiny-cnn.msgpack.zst") for d in (tmp_path / "foreign", here))
    assert (after["meta"], after["layers"]) == (before["meta"], before["layers"])
    for provider, classes in before["providers"].items():
        assert after["providers"][provider] == {**classes, cpu_class(): after["providers"][provider][cpu_class()]}
    cfg = replace(cfg, baseline_dir=here)
    assert not unjudged(cfg)
    report = check(write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=here))
    assert report["verdict"] == "pass", report["first_regression"]


def test_update_baseline_twice_writes_the_same_bytes(tmp_path):
    """Latency is measured, not derived: it is kept while it stays within its band, so an
    unchanged model rewrites a byte-identical baseline."""
    from gate.config import load_config as load
    from gate.formats.baseline.update import COST_BAND, LATENCY_BAND

    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b")
    cfg = load(config)
    path = tmp_path / "b" / "tiny-cnn.msgpack.zst"
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    first = path.read_bytes()
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    if path.read_bytes() == first:
        assert updated.changes == ["no change"]
        return
    # A sub-millisecond latency timed on a loaded runner can move out of its band between two
    # runs, and so can the model's seconds (the first run in a process pays the exporter's warm-up);
    # then, and only then, the recorded value is replaced, and nothing else differs.
    before, after = decode_baseline(first, "first"), read_document(path)
    old, new = (next(iter(d["providers"]["CPUExecutionProvider"].values()))["latency_ms"] for d in (before, after))
    assert old == new or not 1 / LATENCY_BAND <= new / old <= LATENCY_BAND, (old, new)
    old, new = (d["meta"]["seconds"] for d in (before, after))
    assert old == new or not 1 / COST_BAND <= new / old <= COST_BAND, (old, new)
    for doc in (before, after):
        for entry in doc["providers"]["CPUExecutionProvider"].values():
            entry["latency_ms"] = None
        del doc["meta"]["seconds"]
    assert encode_baseline(after) == encode_baseline(before)


def _provider(report: dict, name: str) -> dict:
    return next(p for p in report["models"][0]["providers"] if p["name"] == name)


def test_latency_is_timed_where_it_is_read(tmp_path):
    """update-baseline records the shipped graph's latency; check times it only when
    `max-slowdown` gates it, and then compares it with the recorded one."""
    from gate.config import load_config as load

    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b",
                          providers='["CPUExecutionProvider"]')
    cfg = load(config)
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    entry = next(iter(read_document(tmp_path / "b" / "tiny-cnn.msgpack.zst")["providers"]["CPUExecutionProvider"].values()))
    assert entry["latency_ms"] > 0
    ort = _provider(check(config), "CPUExecutionProvider")
    assert ort["latency_ms"] is None and ort["baseline_latency_ms"] == entry["latency_ms"]
    config.write_text(config.read_text().replace("providers =", "max-slowdown = 1000.0\nproviders =", 1))
    ort = _provider(check(config), "CPUExecutionProvider")
    assert ort["latency_ms"] > 0 and ort["status"] == "pass"


def test_calibrated_noise_widens_thresholds(tmp_path):
    """update-baseline --calibrate records run-to-run noise per layer; a layer whose recorded
    noise is large is not failed for moving within it."""
    from gate.config import load_config as load

    base = tmp_path / "b"
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=base)
    cfg = load(config)
    commands.update_baseline(cfg, cfg.models, cfg.providers, calibrate=True)
    doc = read_document(base / "tiny-cnn.msgpack.zst")
    assert all("noise" in layer and layer["noise"] >= 0 for layer in doc["layers"])
    cpu = next(iter(doc["providers"]["CPUExecutionProvider"].values()))
    assert all("noise" in row for row in cpu["layers"].values() if row["err"] is not None)
    assert check(config)["verdict"] == "pass"
    # Shrink one layer's recorded error 100x: a regression by the floor-less limit below...
    for row in cpu["layers"].values():
        row["err"] = row["err"] / 100 if row["err"] else row["err"]
    extra = 'layer-tolerances = [{ layers = "*", floor = 1e-12 }]\n'
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=base, extra=extra)
    for row in cpu["layers"].values():
        row["noise"] = 0.0
    (base / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    assert check(config)["first_regression"]["check"] == "error-growth"
    # ...but within the noise calibration measured (here: recorded as large), it passes.
    for row in cpu["layers"].values():
        row["noise"] = row["err"] * 100 if row["err"] else 0.0
    (base / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    report = check(config)
    ort = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    assert ort["status"] == "pass", ort["first_regression"]

"""A precision the configuration did not ask for is a finding, not a new baseline key: a post-export
transform that lowers one layer (an int8 weight, dynamic int8, a float16 block, a bfloat16 round trip)
fails the check, says what changed, names the layer the change hurt on the ONNX Runtime provider, and
never offers to record a baseline for that precision. Real exports, real ONNX Runtime sessions.
Models and transforms: tests/e2e/precision_models.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.verdict.report_file import report_document

HERE = Path(__file__).parent


def _config(tmp: Path, transform: str | None = None, precision: str | None = None,
            factory: str = "mlp") -> Path:
    shutil.copy(HERE / "precision_models.py", tmp / "precision_models.py")
    cpu = '"CPUExecutionProvider"'
    if precision:
        cpu = f'{{ name = "CPUExecutionProvider", precision = "{precision}" }}'
    path = tmp / "parity-gate.toml"
    path.write_text(f'baseline-dir = "baselines"\nproviders = ["torch-cpu", {cpu}]\n\n'
                    '[[models]]\nname = "mlp"\n'
                    f'factory = "precision_models:{factory}"\ninputs = [{{ name = "x", shape = [8, 16] }}]\n'
                    + (f'transform = "precision_models:{transform}"\n' if transform else ""))
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("precision")
    cfg = load_config(_config(tmp))
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def check(tmp: Path, transform: str | None, precision: str | None = None) -> dict:
    cfg = load_config(_config(tmp, transform, precision))
    return report_document(commands.check(cfg, cfg.models, cfg.providers))


@pytest.mark.parametrize("transform, now, said", [
    ("int8_weight", "int8", "int8 weight `fc2.weight_quantized` through DequantizeLinear"),
    ("dynamic_int8", "int8", "int8 weight `fc2.weight_quantized` through MatMulInteger"),
    ("float16_block", "float32", "float16 weight `fc2.weight_fp16`"),
    ("bfloat16_cast", "float32", "cast to bfloat16 (node `fc2_to_bf16`)"),
])
def test_a_precision_nobody_configured_fails_naming_what_changed_and_the_layer(recorded, transform, now,
                                                                                 said):
    report = check(recorded, transform)
    (model,) = report["models"]
    first = report["first_regression"]
    assert report["verdict"] == "regressed" and first["provider"] == "CPUExecutionProvider", first
    assert first["layer"] == "fc2", first  # the layer the change hurt, judged against the float32 entry
    cpu = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    assert cpu["status"] == "regressed" and cpu["device"].endswith(":int8") is (now == "int8")
    (audit,) = [a for a in cpu["audits"] if a["check"] == "precision"]
    assert audit["status"] == "fail" and said in audit["message"], audit
    assert ("now computes in int8" in audit["message"]) is (now == "int8")
    assert all(p["status"] == "pass" for p in model["providers"] if p["name"] == "torch-cpu")
    step = model["next_step"]
    assert step["kind"] == "precision-changed" and "update-baseline" not in (step["command"] or ""), step


def test_a_cast_in_the_models_own_code_is_a_model_change_not_a_config_to_fix(recorded):
    """No transform: the model's code rounds `fc2`'s output through float16. `torch-cpu` runs that code and
    fails where it hurts; no precision audit tells the team to fix a transform or quantization config it
    does not have, and the step says what of the model changed."""
    cfg = load_config(_config(recorded, factory="mlp_rounded"))
    report = report_document(commands.check(cfg, cfg.models, cfg.providers))
    (model,) = report["models"]
    assert report["verdict"] == "regressed" and report["first_regression"]["provider"] == "torch-cpu"
    assert not [a for p in model["providers"] for a in p["audits"] if a["check"] == "precision"]
    assert model["next_step"]["kind"] == "model-changed", model["next_step"]
    assert [a["check"] for a in model["audits"] if a["status"] == "fail"] == ["casts"], model["audits"]


@pytest.mark.parametrize("factory", ["mlp", "mlp_rounded_with_to"])
def test_the_models_own_cast_removed_is_a_model_change_where_nothing_moved(tmp_path, factory):
    """Recorded with `fc2`'s output rounded through float16, checked without it: the float64 reference
    promotes the cast (it does not move) and the runtimes' errors only shrink, yet what ships moved ~1e-4:
    the `casts` audit fails with a model change's step. Twin: the same casts written with `.to` pass."""
    cfg = load_config(_config(tmp_path, factory="mlp_rounded"))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert updated.error is None, updated.error
    cfg = load_config(_config(tmp_path, factory=factory))
    report = report_document(commands.check(cfg, cfg.models, cfg.providers))
    (model,) = report["models"]
    assert model["reuse"]["reference"] is False  # the reference ran again and counted the casts
    if factory != "mlp":
        assert report["verdict"] == "pass", report["first_regression"]
        return
    first = report["first_regression"]
    assert (report["verdict"], first["check"]) == ("regressed", "casts"), first
    assert "less often than in the baseline, at `(model)` (1 -> 0 casts)" in first["message"], first
    assert not [r for p in model["providers"] for r in p["layers"] if r["status"] == "fail"]
    assert model["next_step"]["kind"] == "model-changed", model["next_step"]
    (hint,) = [h for h in model["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["cause"] == "casts", hint


def test_casts_in_a_renamed_block_are_the_blocks_own(tmp_path):
    """The verdict renames `block` to `stage`: its casts are counted under the baseline's name, so the
    rename passes rather than fail the casts audit (a cast gone from `block`, one new in `stage`)."""
    cfg = load_config(_config(tmp_path, factory="block_rounded"))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert updated.error is None, updated.error
    cfg = load_config(_config(tmp_path, factory="block_rounded_renamed"))
    report = report_document(commands.check(cfg, cfg.models, cfg.providers))
    assert report["verdict"] == "pass", report["first_regression"]
    assert not [a for a in report["models"][0]["audits"] if a["check"] == "casts"]


def test_the_unchanged_graph_passes(recorded):
    assert check(recorded, None)["verdict"] == "pass"


def test_a_configured_precision_is_no_finding_and_needs_its_own_baseline(recorded):
    """The config asks for int8 on the provider: no precision finding; its int8 entry is recorded as any
    new configured target is."""
    report = check(recorded, "int8_weight", "int8")
    cpu = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    assert not [a for a in cpu["audits"] if a["check"] == "precision"]
    assert cpu["status"] == "no-baseline" and cpu["device"].endswith(":int8")


@pytest.mark.parametrize("transform, factory", [(None, "mlp"), (None, "mlp_export_scaled"),
                                                ("float16_block", "mlp")])
def test_a_precision_configured_that_nothing_computes_in_is_a_finding(tmp_path, transform, factory):
    """float16 configured for the CPU EP, whose float32 graph has no option to compute in it: its errors are
    float32's, and float16's limits (a 1e-3 floor) would pass faults a float32 runtime is held to. Recording
    warns and the check fails a `precision-label` audit, also where a fault only the graph computes (1e-4)
    gives errors no float32 run has: its entry recorded float32's. Twin: a graph that does compute a block in
    float16 earns its label, with no such finding."""
    cfg = load_config(_config(tmp_path, transform, "float16"))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    said = [w for w in updated.warnings if "nothing computes in float16" in w]
    cfg = load_config(_config(tmp_path, transform, "float16", factory))
    report = report_document(commands.check(cfg, cfg.models, cfg.providers))
    cpu = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    labels = [a for a in cpu["audits"] if a["check"] == "precision-label"]
    if transform is not None:
        assert not said and not labels and report["verdict"] == "pass", (said, labels)
        return
    assert said and "configured as float16, but its graph computes in float32" in said[0], updated.warnings
    assert report["verdict"] == "regressed" and [a["status"] for a in labels] == ["fail"], cpu["audits"]
    assert report["models"][0]["next_step"]["kind"] == "runtime-audit"


@pytest.mark.parametrize("recorded_as, now", [("mlp_float64", "mlp_float64_dropped"),
                                              ("mlp_float64_dropped", "mlp_float64"),
                                              ("mlp_float64", "mlp_float64")])
def test_an_output_whose_dtype_changed_fails_on_every_runtime(tmp_path, recorded_as, now):
    """A model that ships float64 outputs dropped to float32 (its errors, 1e-7, are under every float32
    limit), or the other way: what ships changed precision, which no tolerance judges: each runtime's
    output row fails `dtype`. Twin: the same model passes."""
    cfg = load_config(_config(tmp_path, factory=recorded_as))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert updated.error is None, updated.error
    cfg = load_config(_config(tmp_path, factory=now))
    report = report_document(commands.check(cfg, cfg.models, cfg.providers))
    if now == recorded_as:
        assert report["verdict"] == "pass", report["first_regression"]
        return
    runtimes = [p for p in report["models"][0]["providers"] if p["role"] == "runtime"]
    assert len(runtimes) == 2
    for p in runtimes:
        (row,) = [r for r in p["layers"] if r["layer"] == "(model)"]
        assert (row["status"], row["check"]) == ("fail", "dtype"), row
        assert "what ships changed" in row["message"], row
    assert report["first_regression"]["check"] == "dtype"

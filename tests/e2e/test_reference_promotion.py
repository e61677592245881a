"""A float64 reference that is float64 throughout, on ``transformers`` models with random weights
(examples/transformers_zoo.py): Llama-, Mistral- and Qwen2-style decoders cast to float32 inside
their forward; the reference promotes those casts, counts them, and reports what it could not
promote. Real exports, real ONNX Runtime, baselines written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import tools

tools.module("transformers")

from gate import commands  # noqa: E402
from gate.config import InputSpec, ModelSpec, load_config  # noqa: E402
from gate.fingerprint import relative_error  # noqa: E402
from gate.formats.baseline import read_document  # noqa: E402
from gate.model.build import build  # noqa: E402
from gate.runners.reference import run_reference  # noqa: E402
from tests.conftest import ROOT, run_cli  # noqa: E402

IDS = (InputSpec("input_ids", (1, 16), "int64", 0, 128),)
DECODERS = ("llama", "mistral", "qwen2")


def reference(factory: str, promote: bool = True):
    built = build(ModelSpec(factory.replace("_", "-"), f"examples.transformers_zoo:{factory}", IDS), ROOT)
    return run_reference(built, lambda _: None, promote)


@pytest.mark.parametrize("factory", [*DECODERS, "bert", "gpt2"])
def test_after_promotion_no_layer_of_the_reference_is_below_float64(factory):
    ref = reference(factory)
    assert ref.dtype == "float64" and ref.notes.below == {}
    assert all(r.reached == "float64" and r.fp.dtype == "float64" for r in ref.records)
    if factory in DECODERS:  # RMSNorm (x4 + final), attention softmax (x2), rotary embedding (x2)
        assert sum(ref.notes.promoted.values()) == 9 and "model.layers.0.self_attn" in ref.notes.promoted
        as_written = reference(factory, promote=False)
        assert {"model.layers.0.input_layernorm", "model.layers.1.self_attn", "model.norm"} <= set(as_written.notes.below)
    else:
        assert ref.notes.promoted == {}


def test_promotion_is_what_keeps_a_refactor_at_float64_noise():
    """exp(x - logsumexp(x)) for softmax, still written in float32: as written, the reference moves
    by float32 rounding; promoted, by float64 rounding."""
    moved = {}
    for promote in (False, True):
        a, b = reference("llama", promote), reference("llama_refactored", promote)
        out_a, out_b = a.records[-1], b.records[-1]
        assert out_a.name == out_b.name == "(model)[logits]"
        moved[promote] = relative_error(out_b.fp, out_a.fp)
    assert moved[False] > 1e-8 and moved[True] < 1e-13, moved


def config(tmp: Path, factory: str, baseline_dir: Path, providers: str = '["torch-cpu", "CPUExecutionProvider"]',
           extra: str = "") -> Path:
    path = tmp / "parity-gate.toml"
    path.write_text(f'baseline-dir = "{baseline_dir.as_posix()}"\nproviders = {providers}\n[[models]]\n'
                    f'name = "llama"\nfactory = "examples.transformers_zoo:{factory}"\n'
                    'inputs = [{ name = "input_ids", shape = [1, 16], dtype = "int64", low = 0, high = 128 }]\n'
                    + extra)
    return path


@pytest.fixture(scope="module")
def llama_baseline(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("llama")
    cfg = load_config(config(tmp, "llama", tmp / "baselines"))
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp / "baselines"


def check(tmp: Path, factory: str, baseline_dir: Path, **kw) -> dict:
    cfg = load_config(config(tmp, factory, baseline_dir, **kw))
    return commands.check(cfg, cfg.models, cfg.providers).to_dict()


def test_a_refactor_that_changes_no_math_passes(tmp_path, llama_baseline):
    report = check(tmp_path, "llama_refactored", llama_baseline)
    assert report["verdict"] == "pass", report["first_regression"]
    reference = report["models"][0]["reference"]
    assert reference["below_float64"] == {} and sum(reference["promoted"].values()) == 9
    drift = max(r["value"] for r in report["models"][0]["providers"][0]["layers"])
    assert drift < 1e-13  # the float64 limit (1e-9) is far away


def test_a_1e6_weight_fault_is_named_at_its_layer(tmp_path, llama_baseline):
    report = check(tmp_path, "llama_weight_1e6", llama_baseline)
    first = report["first_regression"]
    assert (first["provider"], first["precision"], first["check"]) == ("torch-cpu", "float64", "reference-drift")
    assert first["layer"] == "model.layers.1.mlp.down_proj" and first["threshold"] == 1e-9


def test_a_numpy_round_trip_is_reported_with_its_layers_and_passes_a_rerun(tmp_path):
    base = tmp_path / "baselines"
    cfg = load_config(config(tmp_path, "llama_with_numpy", base, providers='["torch-cpu"]'))
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    doc = read_document(base / "llama.msgpack.zst")
    assert doc["meta"]["below_float64"] == {"post": "float32"} and sum(doc["meta"]["promoted"].values()) == 9
    reached = {x["name"]: x.get("reached", "float64") for x in doc["layers"]}
    assert reached["post"] == reached["(model)"] == "float32" and reached["body[logits]"] == "float64"
    report = check(tmp_path, "llama_with_numpy", base, providers='["torch-cpu"]')
    assert report["verdict"] == "pass", report["first_regression"]
    rows = {r["layer"]: r for r in report["models"][0]["providers"][0]["layers"]}
    assert rows["post"]["threshold"] == 1e-5 and rows["body[logits]"]["threshold"] == 1e-9  # the precision reached
    proc = run_cli("check", "--markdown", "r.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reference below float64 in 1 layer: post (float32)" in " ".join(proc.stdout.split())
    assert "the reference computed below float64 in 1 layer (first `post`: float32" in (tmp_path / "r.md").read_text()
    shown = run_cli("show", str(base / "llama.msgpack.zst"), cwd=tmp_path).stdout
    assert "meta below_float64 1 post:float32" in shown and "layer post type=NumpyRoundTrip reached=float32" in shown


def test_without_promotion_the_reference_is_held_to_float32_after_its_first_island(tmp_path, llama_baseline):
    """Turned off, the reference computes as written: from the first float32 island on, it is as
    precise as float32, and so are its limits (never a 1e-9 only float64 can meet)."""
    report = check(tmp_path, "llama", llama_baseline, providers='["torch-cpu"]', extra="reference-promotion = false\n")
    model = report["models"][0]
    assert model["reference"]["promoted"] == {} and "model.norm" in model["reference"]["below_float64"]
    rows = {r["layer"]: r for r in model["providers"][0]["layers"]}
    assert rows["model.embed_tokens"]["threshold"] == 1e-9  # before the first island: float64
    assert rows["model.norm"]["threshold"] == 1e-5 and 1e-9 < rows["model.norm"]["value"] < 1e-5
    assert report["verdict"] == "pass"

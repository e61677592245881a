"""Refactors that change no number pass, naming what changed in structure; one that moves a number
still fails where it moved. Baselines recorded here with the original factory, then checked with
the refactored one: real exports, real ONNX Runtime."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import recorded as recorded_projects

HERE = Path(__file__).parent
SIAMESE = ('[{ name = "a", shape = [2, 3, 8, 8], dtype = "float32" }, '
           '{ name = "b", shape = [2, 3, 8, 8], dtype = "float32" }]')
MODELS = {
    "cnn": ('[{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]', "examples.zoo:tiny_cnn"),
    "llama": ('[{ name = "input_ids", shape = [1, 8], dtype = "int64", low = 0, high = 100 }]',
              "refactor_models:llama_eager"),
    "transformer": ('[{ name = "x", shape = [2, 8, 16], dtype = "float32" }]',
                    "refactor_models:transformer_with_dropout"),
    "convbn": ('[{ name = "x", shape = [2, 4, 8, 8], dtype = "float32" }]', "refactor_models:conv_bn"),
    "twoout": ('[{ name = "x", shape = [2, 5, 6], dtype = "float32" }]', "refactor_models:two_outputs"),
    "blocks": ('[{ name = "x", shape = [2, 3, 8, 8], dtype = "float32" }]', "refactor_models:blocks"),
    "siamese": (SIAMESE, "refactor_models:siamese"),
    "batched": (SIAMESE, "refactor_models:siamese_batched"),
}


def _config(tmp: Path, model: str, factory: str) -> Path:
    shutil.copy(HERE / "refactor_models.py", tmp / "refactor_models.py")
    if not (tmp / "examples").exists():
        shutil.copytree(HERE.parents[1] / "examples", tmp / "examples")
    path = tmp / "parity-gate.toml"
    path.write_text(f'providers = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\nname = "{model}"\n'
                    f'factory = "{factory}"\ninputs = {MODELS[model][0]}\n')
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    models = ((model, factory) for model, (_, factory) in MODELS.items())
    return recorded_projects.record(tmp_path_factory.mktemp("refactors"), _config, models)


def check(tmp: Path, model: str, factory: str) -> dict:
    return recorded_projects.check(tmp, _config, model, factory)


def test_regrouping_and_renaming_modules_passes_and_keeps_per_layer_coverage(recorded):
    report = check(recorded, "cnn", "refactor_models:cnn_regrouped")
    assert report["verdict"] == "pass", report["first_regression"]
    (model,) = report["models"]
    notes = [a["message"] for a in model["audits"] if a["check"] == "structure"]
    assert any("layers renamed since the baseline (stem.0 → features.0.0" in n for n in notes)
    assert any("(features = block2" in n for n in notes), notes  # the new container's output is block2's
    reference = model["providers"][0]
    assert reference["checked"] >= 20  # renamed layers are compared as the baseline's, not dropped
    rows = {r["layer"]: r for r in reference["layers"]}
    assert (rows["head"]["status"], rows["head"]["message"]) == ("pass", "renamed from fc")
    assert rows["features.1"]["message"] == "renamed from block1"
    assert rows["features"]["status"] == "pass" and rows["features"]["message"].startswith("same values as block2")
    runtime = {r["layer"]: r for r in model["providers"][2]["layers"]}
    assert runtime["head"]["check"] == "error-growth" and runtime["head"]["baseline"] is not None
    # the trace names tensors: renamed ones change it, never the count of operations, and it says so
    said = " ".join(model["reuse"]["details"])
    assert "operations, as when the baseline was made" in said and "operations of the" not in said, said


def test_a_refactor_that_moves_a_number_fails_where_it_moved(recorded):
    report = check(recorded, "cnn", "refactor_models:cnn_regrouped_and_changed")
    assert report["verdict"] == "regressed"
    first = report["first_regression"]
    # `fc` renamed `head` with its weight changed: its kept bias says which module it was, so it fails there
    assert (first["layer"], first["check"]) == ("head", "reference-drift"), first
    assert "its tensor `head.weight` changed" in first["message"], first["message"]


def test_a_later_bug_after_an_unrecorded_rename_is_not_blamed_on_the_renamed_weights(recorded):
    report = check(recorded, "cnn", "refactor_models:cnn_regrouped_then_code_changed")
    assert report["verdict"] == "regressed"
    (hint,) = [h for h in report["models"][0]["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["cause"] == "code" and hint["evidence"]["weights_changed"] is False, hint["message"]
    assert "its weights changed" not in hint["message"] and "tensors_changed" not in hint["evidence"]
    # every tensor is matched: by the layers' numbers, or by the tensors a renamed layer kept (`fc` -> `head`)
    assert "its code changed: the weights are the baseline's (32 tensors renamed with the layers the verdict " \
           "matched)" in hint["message"], hint["message"]
    assert hint["evidence"]["tensors_renamed"] >= 10  # stem and block1 matched by their numbers


def test_switching_attention_from_eager_to_sdpa_passes(recorded):
    report = check(recorded, "llama", "refactor_models:llama_sdpa")
    assert report["verdict"] == "pass", report["first_regression"]
    (note,) = [a["message"] for a in report["models"][0]["audits"] if a["check"] == "structure"]
    assert "2 layers gone since the baseline (layers.0.self_attn[1], layers.1.self_attn[1])" in note and "update-baseline" in note


def test_deleting_a_dropout_from_a_sequential_passes_though_names_shift(recorded):
    report = check(recorded, "transformer", "refactor_models:transformer_dropout_deleted")
    assert report["verdict"] == "pass", report["first_regression"]
    (model,) = report["models"]
    reference, runtime = model["providers"][0], model["providers"][2]
    ran = {r["layer"]: r for r in reference["layers"] if r["status"] != "missing"}
    assert ran["blocks.0.mlp.1"]["message"] == "renamed from blocks.0.mlp.2"  # the GELU, by its numbers
    assert ran["blocks.0.mlp.2"]["message"] == "renamed from blocks.0.mlp.3"
    gone = [r for r in reference["layers"] if r["status"] == "missing"]
    assert {r["layer"] for r in gone} == {"blocks.0.mlp.1", "blocks.1.mlp.1"}  # the Dropouts
    rt = {r["layer"]: r for r in runtime["layers"]}
    assert rt["blocks.0.mlp.2"]["status"] == "pass" and rt["blocks.0.mlp.2"]["baseline"] is not None


def test_a_conv_wrapped_with_its_batchnorm_is_never_compared_with_the_conv_it_is_not(recorded):
    """`stem` (a conv) and `stem_bn` wrapped as `stem = Sequential(conv, bn)`: the conv is now `stem.0`
    (renamed, by its numbers) and the conv's old name holds the pair's output, compared with nothing (it
    was compared with the conv's values: a drift of 0.3 blamed on `stem` and its tensors). With the
    BatchNorm's eps changed, the first regression is after the pair, its cause the code, no tensor
    blamed. Twin: the wrap alone passes."""
    assert check(recorded, "convbn", "refactor_models:conv_bn_wrapped")["verdict"] == "pass"
    report = check(recorded, "convbn", "refactor_models:conv_bn_wrapped_eps_changed")
    assert report["verdict"] == "regressed"
    assert report["first_regression"]["layer"] not in ("stem", "stem.0"), report["first_regression"]
    rows = {r["layer"]: r for r in report["models"][0]["providers"][0]["layers"]}
    assert rows["stem.0"]["message"] == "renamed from stem" and rows["stem"]["status"] == "new"
    (hint,) = [h for h in report["models"][0]["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["cause"] == "code" and "tensors_changed" not in hint["evidence"], hint["message"]
    # the conv's own weight 1e-4 off: no number matches it to its old name, its type does; named there
    report = check(recorded, "convbn", "refactor_models:conv_bn_wrapped_conv_changed")
    first = report["first_regression"]
    assert (first["layer"], first["check"]) == ("stem.0", "reference-drift") and first["value"] < 1e-3, first
    (hint,) = [h for h in report["models"][0]["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["tensors_changed"] == ["stem.0.weight"], hint["message"]
    # the headline names that tensor alone, as the hint does: the conv's bias only moved with its rename
    assert first["message"].endswith("its tensor `stem.0.weight` changed: re-expressed (split, merged or "
                                     "renamed) into as many values as before, not the same ones"), first


def test_outputs_returned_in_a_dataclass_are_each_checked(recorded):
    """A registered dataclass of outputs: each field ships, so each is compared. The tuple rewritten as the
    dataclass passes as a rename; its twin, the second field 1e-4 off, fails there (it was never read)."""
    report = check(recorded, "twoout", "refactor_models:two_outputs_as_a_dataclass")
    assert report["verdict"] == "pass", report["first_regression"]
    notes = [a["message"] for a in report["models"][0]["audits"] if a["check"] == "structure"]
    assert any("(model)[1] → (model)[h]" in n for n in notes), notes
    report = check(recorded, "twoout", "refactor_models:two_outputs_as_a_dataclass_second_changed")
    assert report["verdict"] == "regressed"
    assert report["first_regression"]["layer"] == "(model)[h]", report["first_regression"]


def test_a_renamed_layer_with_a_fault_inside_fails_where_it_changed_not_at_the_layer_after_it(recorded):
    """`inp` renamed `embed` with its weight 1e-4 off: its values match no baseline layer, its kept bias
    says which module it was: compared as `inp`, it fails there, naming its weight. Twin: the rename alone
    passes."""
    report = check(recorded, "twoout", "refactor_models:two_outputs_renamed")
    assert report["verdict"] == "pass", report["first_regression"]
    report = check(recorded, "twoout", "refactor_models:two_outputs_renamed_faulted")
    first = report["first_regression"]
    assert (first["layer"], first["check"]) == ("embed", "reference-drift"), first
    assert "its tensor `embed.weight` changed" in first["message"], first["message"]


def test_a_scripted_or_traced_module_is_checked_where_its_output_is_used(recorded):
    """`inp` wrapped in torch.jit.trace or .script (it restored ScriptModule state as plain dicts: exit 4):
    TorchScript runs it, out of the hooks' sight, so `inp` is gone and every other layer is compared.
    Scripted, torch exports it with neither exporter: that model alone fails to export, its PyTorch runs
    checked all the same. Twin: `inp`'s weight 1e-4 off fails after it, naming that weight."""
    assert check(recorded, "twoout", "refactor_models:two_outputs_traced")["verdict"] == "pass"
    (model,) = check(recorded, "twoout", "refactor_models:two_outputs_scripted")["models"]
    assert model["error"]["status"] == "EXPORT_FAIL", model["error"]
    assert [p["status"] for p in model["providers"]] == ["pass", "pass", "error"]
    report = check(recorded, "twoout", "refactor_models:two_outputs_traced_faulted")
    assert report["first_regression"]["layer"] == "head", report["first_regression"]
    (hint,) = [h for h in report["models"][0]["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["tensors_changed"] == ["inp.weight"], hint["message"]
    report = check(recorded, "twoout", "refactor_models:two_outputs_scripted_faulted")
    assert report["first_regression"]["layer"] == "head", report["first_regression"]


def test_a_compiled_module_or_model_is_checked_as_the_module_it_compiles(recorded):
    """`inp` and the whole model wrapped in torch.compile (the gate's hooks broke dynamo's trace: INFER_FAIL
    blamed on the forward): the gate runs the modules compiled, under their own names, and passes. Twin:
    the compiled `inp`'s weight 1e-4 off fails there, naming that weight."""
    report = check(recorded, "twoout", "refactor_models:two_outputs_compiled")
    assert report["verdict"] == "pass", report["models"][0]["error"]
    assert not report["models"][0]["audits"]  # the same layers as the baseline's: no `_orig_mod` in a name
    report = check(recorded, "twoout", "refactor_models:two_outputs_compiled_faulted")
    first = report["first_regression"]
    assert (first["layer"], first["check"]) == ("inp", "reference-drift"), first
    assert "its tensor `inp.weight` changed" in first["message"], first["message"]


def _model_change(report: dict) -> dict:
    (hint,) = [h for h in report["models"][0]["hints"] if h["kind"] == "model-change"]
    return hint


def test_a_block_shared_or_wrapped_with_a_fault_fails_where_the_fault_is_and_the_rest_follows(recorded):
    """Two copies of a block made one shared block, or the model wrapped in DataParallel (every name
    prefixed), a weight 1e-5 off: its values match no baseline layer, yet each layer in its place is the
    one it was, so the fault's layer fails first, blamed on its weight, and what comes after follows.
    Twin: the refactor alone passes."""
    for factory in ("blocks_shared", "blocks_wrapped"):
        report = check(recorded, "blocks", f"refactor_models:{factory}")
        assert report["verdict"] == "pass", report["first_regression"]
    for factory, first, tensor in (("blocks_shared_faulted", "b1.conv2", "b1.conv2.weight"),
                                   ("blocks_wrapped_faulted", "module.b2.conv1", "module.b2.conv1.weight")):
        report = check(recorded, "blocks", f"refactor_models:{factory}")
        assert report["first_regression"]["layer"] == first, report["first_regression"]
        hint = _model_change(report)
        assert tensor in hint["evidence"]["tensors_changed"], hint["message"]
        rows = report["models"][0]["providers"][0]["layers"]
        assert not [r["layer"] for r in rows if r["status"] in ("new", "missing") and r["layer"] != "module"]
    assert "causes" not in hint["evidence"], hint["message"]  # nothing later changed itself


def test_a_code_change_after_a_fault_in_a_shared_block_is_named_as_code(recorded):
    """The shared block's fault above, and `pool` now a max pool: that later change is named as code."""
    hint = _model_change(check(recorded, "blocks", "refactor_models:blocks_shared_faulted_pool_changed"))
    assert {"layer": "pool", "tensors": [], "code": True} in hint["evidence"]["causes"], hint["message"]


def test_a_block_returning_a_copy_keeps_its_layers_compared_on_every_runtime(recorded):
    """Each block returns ``.clone()`` of its result: the optimizer drops the Identity, and the block's
    layer is the value it copied, compared on the runtimes as before (no coverage finding). Twin: with a
    weight 1e-5 off in `b2.conv1`, it fails there."""
    report = check(recorded, "blocks", "refactor_models:blocks_cloned")
    assert report["verdict"] == "pass", report["first_regression"]
    (model,) = report["models"]
    assert not [a for a in model["audits"] if a["check"] == "coverage"], model["audits"]
    runtime = {r["layer"]: r for r in model["providers"][2]["layers"]}
    assert runtime["b1"]["status"] == "pass" and runtime["b2"]["status"] == "pass", runtime["b1"]
    report = check(recorded, "blocks", "refactor_models:blocks_cloned_faulted")
    assert report["first_regression"]["layer"] == "b2.conv1", report["first_regression"]


def test_an_encoders_calls_batched_into_one_pass_as_a_move_and_fail_with_a_fault(recorded):
    """``enc(a)``, ``enc(b)`` become ``enc(cat([a, b])).chunk(2)``: each layer in ``enc`` now computes both
    calls' values together (its shape doubled, its second call gone), the outputs hold: a refactor. Twins:
    with a weight 1e-5 off in `enc.conv` it fails there, on weights; batching the wrong input fails."""
    report = check(recorded, "siamese", "refactor_models:siamese_batched")
    assert report["verdict"] == "pass", report["first_regression"]
    notes = " ".join(a["message"] for a in report["models"][0]["audits"] if a["check"] == "structure")
    assert "`enc.conv` now computes `enc.conv` and `enc.conv#2`'s values together (inside `(model)`)" in notes
    # one call lets the optimizer fuse the BatchNorm into its Conv: what ships, nothing to fix
    (lost,) = [a for a in report["models"][0]["audits"] if a["check"] == "coverage"]
    assert "nothing to fix where the change is intended" in lost["message"], lost["message"]
    report = check(recorded, "siamese", "refactor_models:siamese_batched_faulted")
    first = report["first_regression"]
    assert (first["layer"], first["check"]) == ("enc.conv", "shape"), first
    (hint,) = [h for h in report["models"][0]["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["weights_changed"] is True, hint["message"]
    report = check(recorded, "siamese", "refactor_models:siamese_batched_wrong")
    assert report["verdict"] == "regressed" and report["first_regression"]["layer"] == "enc.conv"


def test_a_batched_call_split_into_one_call_per_input_passes_as_a_move(recorded):
    """The batched encoder's one call split into one per input: the first call computes part of its
    baseline values, the second, new, the rest."""
    report = check(recorded, "batched", "refactor_models:siamese")
    assert report["verdict"] == "pass", report["first_regression"]
    notes = " ".join(a["message"] for a in report["models"][0]["audits"] if a["check"] == "structure")
    assert "`enc.conv` and `enc.conv#2` now compute its baseline values in parts" in notes, notes

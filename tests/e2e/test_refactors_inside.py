"""Numbers decide across modules, on real exports and real ONNX Runtime sessions: a refactor inside a
module (a BatchNorm folded into the conv before it, q/k/v merged into one projection, a Linear split in
two) passes with a note saying where the values went, and its faulted twin still fails at its layer;
zero-initialized tables and a module shared between calls never cross wires; a fault in a convolution
the exporter folded its BatchNorm into names both. Models: tests/e2e/inside_models.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.verdict.report_file import report_document

HERE = Path(__file__).parent
IMAGE = '[{ name = "x", shape = [1, 3, 8, 8], dtype = "float32" }]'
TOKENS = '[{ name = "x", shape = [2, 8, 16], dtype = "float32" }]'
ROWS = '[{ name = "x", shape = [2, 8, 8], dtype = "float32" }]'
IDS = '[{ name = "ids", shape = [2, 5], dtype = "int64", low = 0, high = 30 }]'
READINGS = '[{ name = "x", shape = [64, 16], dtype = "float32", low = 290.0, high = 310.0 }]'


def _config(tmp: Path, name: str, factory: str, inputs: str, transform: str | None = None,
            floor: float | None = None) -> Path:
    shutil.copy(HERE / "inside_models.py", tmp / "inside_models.py")
    path = tmp / f"{name}-{factory}-{floor}.toml"
    path.write_text('baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n'
                    + (f"tolerance = {{ floor = {floor} }}\n" if floor else "") + '\n[[models]]\n'
                    f'name = "{name}"\nfactory = "inside_models:{factory}"\ninputs = {inputs}\n'
                    + (f'transform = "inside_models:{transform}"\n' if transform else ""))
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("inside")
    models = (("net", "net", IMAGE), ("tables", "tables", TOKENS), ("fading", "fading", TOKENS),
              ("hidden", "hidden", TOKENS), ("flat", "flat", IMAGE), ("tied", "tied", IDS),
              ("chain", "chain", ROWS), ("tokens", "tokens", TOKENS), ("sensor", "sensor", READINGS),
              ("normed", "normed", IMAGE), ("scaledblock", "layer_scaled", TOKENS), ("lookup", "lookup", IDS))
    for name, factory, inputs in models:
        cfg = load_config(_config(tmp, name, factory, inputs))
        commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def check(tmp: Path, name: str, factory: str, inputs: str = IMAGE, transform: str | None = None,
          floor: float | None = None) -> dict:
    cfg = load_config(_config(tmp, name, factory, inputs, transform, floor))
    return report_document(commands.check(cfg, cfg.models, cfg.providers))  # the JSON report, next steps and all


def _reference(report: dict) -> dict:
    return {r["layer"]: r for r in report["models"][0]["providers"][0]["layers"]}


@pytest.mark.parametrize("factory, moved, words", [
    ("folded", "stem.conv", "`stem.conv`'s output is now `stem.bn`'s"),
    ("merged", "attn.q", "`attn.q` now computes `attn.q`, `attn.k` and `attn.v`'s values together"),
    ("split", "mlp.0", "`mlp.0`'s former output is now `mlp.1`'s"),
])
def test_a_refactor_inside_a_module_passes_saying_where_the_values_went(recorded, factory, moved, words):
    report = check(recorded, "net", factory)
    assert report["verdict"] == "pass", report["first_regression"]
    (model,) = report["models"]
    row = _reference(report)[moved]
    assert row["status"] == "moved" and words in row["message"], row
    (note,) = [a["message"] for a in model["audits"] if a["check"] == "structure" and "moved as a refactor" in a["message"]]
    assert words in note and "`update-baseline` records them as they are now" in note
    step = model["next_step"]
    assert (step["kind"], step["layer"]) == ("refactored", moved)
    assert step["command"].startswith("parity-gate update-baseline --model net")
    assert all(p["status"] == "pass" for p in model["providers"])  # the runtimes are judged as ever


@pytest.mark.parametrize("factory, layer", [("folded_faulted", "stem.conv"), ("merged_faulted", "attn.q"),
                                            ("split_faulted", "mlp.0"), ("stacked_faulted", "mlp.0"),
                                            ("stacked_rounding", "mlp.0"), ("merged_rounding", "attn.q"),
                                            ("split_rounding", "mlp.0")])
def test_the_faulted_twin_of_a_refactor_still_fails_at_its_layer(recorded, factory, layer):
    report = check(recorded, "net", factory)
    first = report["first_regression"]
    assert report["verdict"] == "regressed" and (first["layer"], first["provider"]) == (layer, "torch-cpu"), first
    assert not any(r["status"] == "moved" for r in _reference(report).values())


def test_a_split_that_changed_one_value_is_a_weight_change_and_says_so(recorded):
    """A Linear split into stacked halves only moves values: no float32 rounding to excuse, so one weight
    changed by 1e-4 (an output drift under what a fold's rounding may move it by) fails, naming the
    re-expression. The honest split passes, its halves new layers."""
    refactor = check(recorded, "net", "stacked")
    assert refactor["verdict"] == "pass", refactor["first_regression"]
    assert {r["status"] for r in _reference(refactor).values()} == {"pass", "new"}
    faulted = check(recorded, "net", "stacked_faulted")
    first = faulted["first_regression"]
    assert (first["layer"], first["check"]) == ("mlp.0", "reference-drift") and first["value"] < 1e-5, first
    message = _reference(faulted)["mlp.0"]["message"]
    assert "`mlp.0.weight`" in message and "into as many values as before, not the same ones" in message
    (hint,) = [h["message"] for h in faulted["models"][0]["hints"] if h["kind"] == "model-change"]
    assert "its code and weights changed: 6 tensors" in hint, hint
    assert "the weights are the baseline's" not in hint, hint


def test_a_fault_that_fades_before_the_outputs_still_fails_at_its_layer(recorded):
    """A contracting network fades a weight fault below any limit by its outputs: an output that holds
    by fading is no evidence that the values moved back, so the fault fails where it moved. A refactor
    in the same network still passes."""
    report = check(recorded, "fading", "fading_faulted", TOKENS)
    first = report["first_regression"]
    assert (first["layer"], first["provider"], first["check"]) == ("blocks.4.0", "torch-cpu", "reference-drift"), first
    rows = _reference(report)
    assert rows["(model)"]["status"] == "pass"  # faded: the outputs alone cannot tell
    assert not any(r["status"] == "moved" for r in rows.values())
    refactor = check(recorded, "fading", "fading_split", TOKENS)
    assert refactor["verdict"] == "pass", refactor["first_regression"]
    assert _reference(refactor)["blocks.4.0"]["status"] == "moved"


def test_zero_initialized_tables_and_a_shared_module_never_cross_wires(recorded):
    clean = check(recorded, "tables", "tables", TOKENS)
    assert clean["verdict"] == "pass", clean["first_regression"]
    rows = _reference(clean)
    assert {rows[n]["value"] for n in ("shared", "shared#2", "blocks.0.rel", "blocks.1.rel")} == {0.0}
    assert rows["shared#2"]["absolute"] is True
    faulted = check(recorded, "tables", "tables_faulted", TOKENS)
    first = faulted["first_regression"]
    assert (first["layer"], first["provider"], first["check"]) == ("blocks.1.q", "torch-cpu", "reference-drift")
    for model in faulted["models"]:
        for p in model["providers"]:
            tables = [r for r in p["layers"] if r["layer"] in ("shared", "shared#2", "blocks.0.rel", "blocks.1.rel")]
            assert all(r["status"] in ("pass", "folded", "absent") for r in tables), (p["name"], tables)


def test_a_fault_in_a_conv_whose_batchnorm_was_folded_into_it_names_both(recorded):
    report = check(recorded, "net", "net", transform="conv_folded_into_bn_faulted")
    first = report["first_regression"]
    assert (first["layer"], first["provider"], first["fused"]) == ("stem.bn", "CPUExecutionProvider", ["stem.conv"])


@pytest.mark.parametrize("branch, layer", [("scaled", "scaled.0"), ("gated", "gated.0"), ("lora", "lora_a")])
@pytest.mark.parametrize("refactored", [False, True])
def test_a_weight_change_hidden_from_the_blocks_output_fails_and_names_its_tensor(recorded, branch, layer,
                                                                                    refactored):
    """A layer scale at 1e-6, a zero-initialized gate, LoRA with B = 0: one weight scaled by 1.001 barely
    moves (or does not move) the block's output. Alone, or beside a refactor of `stem` that runs before
    it, the change is never a refactor inside a module: it fails where the reference moved, naming the
    tensor."""
    report = check(recorded, "hidden", f"hidden_{branch}{'_refactored' if refactored else ''}", TOKENS)
    first = report["first_regression"]
    assert report["verdict"] == "regressed" and (first["layer"], first["provider"], first["check"]) == \
        (layer, "torch-cpu", "reference-drift"), first
    rows = _reference(report)
    assert f"`{layer}.weight`" in rows[layer]["message"]
    branch_rows = [r for r in rows.values() if r["layer"].startswith(layer.split(".")[0])]
    assert not any(r["status"] == "moved" for r in branch_rows)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_a_code_change_behind_a_layer_scale_fails_where_an_inlined_module_passes(recorded, approximate):
    """A block's GELU module inlined as a call: a refactor, it passes. Its twin inlines the tanh
    approximation: `block.fc2` moves by 1e-4 and the layer scale (1e-6) leaves the block's output within
    the reference's tolerance, never within what code alone moves float64 by: it fails there."""
    factory = f"layer_scaled_inlined{'_tanh' if approximate == 'tanh' else ''}"
    report = check(recorded, "scaledblock", factory, TOKENS)
    if approximate == "none":
        assert report["verdict"] == "pass", report["first_regression"]
        return
    first = report["first_regression"]
    assert report["verdict"] == "regressed" and (first["layer"], first["check"]) == \
        ("block.fc2", "reference-drift"), first


@pytest.mark.parametrize("moved", ["drop", "act"])
def test_a_child_called_elsewhere_in_its_module_passes_only_where_it_is_an_identity(recorded, moved):
    """`drop` (an eval Dropout) called after the layer scale, not before it: the block's own operations are
    the same, its output bit-identical, and `block.drop`'s values move: a refactor. Twin: `act` (a GELU)
    moved there moves the block's output by a layer-scaled amount, under the reference's tolerance: it fails
    where the values first moved."""
    report = check(recorded, "scaledblock", f"layer_scaled_{moved}_moved", TOKENS)
    if moved == "drop":
        assert report["verdict"] == "pass", report["first_regression"]
        assert _reference(report)["block.drop"]["status"] == "moved"
        return
    assert report["verdict"] == "regressed" and report["first_regression"]["layer"] == "block.fc2", \
        report["first_regression"]


def test_the_refactor_beside_those_faults_passes_alone(recorded):
    report = check(recorded, "hidden", "hidden_refactored", TOKENS)
    assert report["verdict"] == "pass", report["first_regression"]


@pytest.mark.parametrize("factory, floor", [("attn_refactored_faulted", None),
                                            ("attn_refactored_faulted_1e4", 1e-3)])
def test_a_weight_change_in_a_module_whose_code_changed_is_still_a_weight_change(recorded, factory, floor):
    """The twin of every refactor that passes: `attn`'s code refactored, and `attn.q`'s weights scaled by
    an amount whose drift is within float32's rounding (or within a floor loosened to 1e-3). A tensor
    both sides hold whose values changed is a weight change, whatever code changed around it."""
    report = check(recorded, "net", factory, floor=floor)
    first = report["first_regression"]
    assert report["verdict"] == "regressed", first
    assert (first["layer"], first["check"]) == ("attn.q", "reference-drift"), first
    assert "`attn.q.weight`" in _reference(report)["attn.q"]["message"]
    assert not any(r["status"] == "moved" for r in _reference(report).values())
    refactor = check(recorded, "net", "attn_refactored", floor=floor)
    assert refactor["verdict"] == "pass", refactor["first_regression"]


@pytest.mark.parametrize("factory, floor, layer", [("stem_bn_eps", None, "stem.bn"),
                                                   ("mlp_tanh", 1e-3, "mlp.1")])
def test_a_code_change_within_float32_rounding_or_a_loosened_floor_is_a_model_change(recorded, factory, floor,
                                                                                      layer):
    """Code moves float64 values by ~1e-16: a drift of float32's rounding (a BatchNorm's eps moved by a
    tenth) is a change of the model, and a floor loosened for a noisy runtime is no licence for the
    reference (GELU's tanh approximation under floor 1e-3). The fold beside them still passes."""
    report = check(recorded, "net", factory, floor=floor)
    first = report["first_regression"]
    assert report["verdict"] == "regressed", first
    assert (first["layer"], first["check"]) == (layer, "reference-drift"), first
    assert first["value"] < (floor or 1e-6)  # what the floor, as a seal, once excused
    assert report["models"][0]["next_step"]["kind"] == "model-changed"
    assert check(recorded, "net", "folded", floor=floor)["verdict"] == "pass"


@pytest.mark.parametrize("factory, layer", [("merged_out_faulted", "attn.out"), ("folded_attn_scale", "attn")])
def test_beside_a_re_expression_a_kept_weight_or_a_modules_own_code_is_no_rounding(recorded, factory, layer):
    """Tensors gone or new give a float32 rounding budget to what re-expressed them, not to a weight the
    module kept (merged q/k/v beside a change of `attn.out`) nor to a module whose own code changed
    after a fold (attention's scale moved by 1e-7): both fail where they moved."""
    report = check(recorded, "net", factory)
    first = report["first_regression"]
    assert report["verdict"] == "regressed", first
    assert (first["layer"], first["check"]) == (layer, "reference-drift"), first
    assert first["value"] < 1e-6  # within the budget a re-expression has


@pytest.mark.parametrize("name, factory, refactored", [("net", "folded_head_faulted", ("stem.conv", "attn")),
                                                       ("net", "folded_head_rounding", ("stem.conv", "attn")),
                                                       ("flat", "flat_folded_head_faulted", ("conv", "bn"))])
def test_a_change_after_a_refactor_is_named_not_the_refactor(recorded, name, factory, refactored):
    """A fold, and the head's weights scaled past float32's rounding or within it. The outputs move, so no
    call around a top-level module holds: the fold's rounding (`attn`), and a top-level conv whose values
    went on to its BatchNorm's (`conv`), are still no change. The first regression is the head."""
    report = check(recorded, name, factory)
    first, rows = report["first_regression"], _reference(report)
    assert report["verdict"] == "regressed", first
    assert (first["layer"], first["check"]) == ("head", "reference-drift"), first
    assert "`head.weight`" in rows["head"]["message"]
    assert [rows[x]["status"] for x in refactored] == ["moved", "moved"]


def test_a_dropped_layer_holds_an_earlier_layers_values_and_fails(recorded):
    """The twin: the top-level BatchNorm replaced by an identity, not folded. Its output is now the conv's
    (values went back, not on), so it fails where it changed; the fold beside it passes."""
    report = check(recorded, "flat", "flat_skipped")
    assert (report["first_regression"]["layer"], report["verdict"]) == ("bn", "regressed")
    assert check(recorded, "flat", "flat_folded")["verdict"] == "pass"



def test_a_tied_weight_moves_the_reference_first_where_it_is_read(recorded, monkeypatch):
    """`head.weight` also embeds the input, read by the model's forward before `blocks`: scaling it (only
    the weights change) moves `blocks.0` first. That is the first regression, not a contradiction."""
    monkeypatch.setenv("TIED_SCALE", str(1 + 1e-6))
    report = check(recorded, "tied", "tied", IDS)
    assert report["models"][0]["reuse"]["changed"] == ["weights"]
    assert (report["first_regression"]["layer"], report["verdict"]) == ("blocks.0", "regressed")
    assert not [a for a in report["models"][0]["audits"] if a["check"] == "contradiction"]


@pytest.mark.parametrize("name, factory, layer", [("chain", "chain_fc2_twice", "fc2"),
                                                  ("net", "split_scaled_input", "stem.conv")])
def test_a_layer_run_twice_or_code_before_a_refactor_fails_where_it_moved(recorded, name, factory, layer):
    """`fc2` with a copy of it run first: the copy holds its values, which went back, not on; a split of
    `mlp.0` after the model's own forward scaled its input by 1 + 3e-7: that drift comes before any
    weight was re-expressed, so it is no float32 rounding. Both fail where they moved."""
    report = check(recorded, name, factory, ROWS if name == "chain" else IMAGE)
    first = report["first_regression"]
    assert (report["verdict"], first["layer"], first["check"]) == ("regressed", layer, "reference-drift"), \
        first


def test_layers_reshaped_around_a_linear_move_and_their_faulted_twin_fails(recorded):
    """Tokens flattened to rows around `fc1` and `fc2` and reshaped back: their values in the same order under
    another shape, `mlp`'s output holding. That is a refactor, not a change `fc2` passes on: both move. The
    twin flattens time-major and never puts the tokens back: it fails where the values first moved."""
    report = check(recorded, "tokens", "tokens_flat", TOKENS)
    assert report["verdict"] == "pass", report["first_regression"]
    rows = _reference(report)
    assert (rows["mlp.fc1"]["status"], rows["mlp.fc1"]["check"]) == ("moved", "shape")
    assert "`mlp.fc1` holds its own values, in order, under another shape" in rows["mlp.fc1"]["message"]
    assert rows["mlp.fc2"]["status"] == "moved" and rows["mlp"]["status"] == "pass"
    faulted = check(recorded, "tokens", "tokens_flat_faulted", TOKENS)
    assert faulted["verdict"] == "regressed"
    first = faulted["first_regression"]
    assert (first["layer"], first["provider"]) == ("mlp.fc1", "torch-cpu")


def test_a_folds_rounding_is_what_float32_moves_each_layer_by_not_a_fixed_budget(recorded):
    """Weights computed anew in float32 move the float64 reference as far as float32 moves each layer, as the
    baseline's float32 run recorded it: a fold behind inputs that float32 runs with errors of a few 1e-6
    (raw readings around 300, normalized by the BatchNorm) passes. Twin: the fold beside a change of the
    model's own forward (a layer_norm's eps, 1e-5 -> 1e-6), which moves the reference by less than 1e-6 but
    more than float32 moves it there, fails; the fold alone passes."""
    report = check(recorded, "sensor", "sensor_folded", READINGS)
    assert report["verdict"] == "pass", report["first_regression"]
    assert check(recorded, "normed", "normed_folded")["verdict"] == "pass"
    changed = check(recorded, "normed", "normed_folded_eps")
    first = changed["first_regression"]
    assert changed["verdict"] == "regressed", first
    assert first["check"] == "reference-drift" and first["value"] < 1e-6, first


@pytest.mark.parametrize("factory, fails", [("sensor_versioned", True), ("sensor_scaled", True),
                                            ("sensor_versioned_only", False)])
def test_a_new_tensor_nothing_reads_is_no_fold_whose_rounding_hides_a_code_change(recorded, factory, fails):
    """A code change that float32's error there (a few 1e-6) would cover, beside a new buffer the forward
    never reads: no weights were computed anew, so no rounding excuses it, with the buffer or without. Twin:
    the buffer alone passes."""
    report = check(recorded, "sensor", factory, READINGS)
    assert report["verdict"] == ("regressed" if fails else "pass"), report["first_regression"]
    if fails:
        first = report["first_regression"]
        assert (first["layer"], first["check"]) == ("fc2", "reference-drift") and first["value"] < 1e-5, first


@pytest.mark.parametrize("factory, judged, layer", [("lookup_unread_row", "weights-unseen", "(model)"),
                                                   ("lookup_read_rows", "reference-drift", "embed"),
                                                   ("lookup_wrapped", None, None)])
def test_a_weight_change_the_inputs_never_read_fails_as_a_weights_change(recorded, factory, judged, layer):
    """An embedding row past the ids the config draws (`high = 30`) scaled by 1 + 1e-5: no layer moves,
    and still the weights changed, which no refactor does; the tensor is named, the step is to record
    them if intended or to widen the inputs. Twins: the rows the ids read, scaled, fail where the
    embedding moved; the head wrapped in a module (its tensors renamed, their values the same) passes."""
    report = check(recorded, "lookup", factory, IDS)
    first = report["first_regression"]
    if judged is None:
        assert report["verdict"] == "pass", first
        return
    assert (report["verdict"], first["check"], first["layer"]) == ("regressed", judged, layer), first
    assert "`embed.weight`" in first["message"], first["message"]
    if judged == "weights-unseen":
        assert "no layer moved with them on the configured inputs" in first["message"], first["message"]
    step = report["models"][0]["next_step"]  # the layer it moved first at, where one moved
    assert (step["kind"], step.get("layer", "(model)")) == ("weights-changed", layer), step

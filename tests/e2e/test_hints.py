"""Root-cause hints (gate/compare/hints.py), each produced from a real injected cause: real
exports, real ONNX Runtime sessions, real baselines written here with ``update_baseline`` (so
every comparison is between two runs on one machine). No mocks.

The factories below are this file's own: the test copies the file into the temporary config
folder as ``hint_factories.py`` (the config's folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from examples import zoo
from gate.verdict.hints.propagation import REFERENCE_NOISE

# Factories -------------------------------------------------------------------------------


def _cast_forward(dtype):
    def forward(self, x):
        y = type(self).__mro__[1].forward(self, x)
        return y.to(dtype).to(y.dtype)
    return forward


def cnn_fp16_conv() -> nn.Module:
    """block2.conv1 rounds its output through float16 (in the model: every runtime sees it)."""
    m = zoo.tiny_cnn()
    c = m.block2.conv1
    c.__class__ = type("HalfConv2d", (type(c),), {"forward": _cast_forward(torch.float16)})
    return m


def cnn_bf16_conv() -> nn.Module:
    m = zoo.tiny_cnn()
    c = m.block2.conv1
    c.__class__ = type("BFloatConv2d", (type(c),), {"forward": _cast_forward(torch.bfloat16)})
    return m


def cnn_bf16_weights() -> nn.Module:
    """block2.conv1's weight rounded to bfloat16 and back (a checkpoint saved in bfloat16): its code is
    unchanged, and the float64 reference moves by about what a bfloat16 cast of the output would give."""
    m = zoo.tiny_cnn()
    with torch.no_grad():
        w = m.block2.conv1.weight
        w.copy_(w.to(torch.bfloat16).to(w.dtype))
    return m


def _onnx_only_cast(self, x):
    y = type(self).__mro__[1].forward(self, x)
    if torch.onnx.is_in_onnx_export():  # only the exported graph rounds: PyTorch is unchanged
        return y.to(torch.float16).to(y.dtype)
    return y


def cnn_onnx_only_fp16() -> nn.Module:
    """A runtime-only change: the shipped ONNX graph casts block2.conv1's output to float16."""
    m = zoo.tiny_cnn()
    c = m.block2.conv1
    c.__class__ = type("OnnxHalfConv2d", (type(c),), {"forward": _onnx_only_cast})
    return m


class Clamp0(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)


def cnn_relu_as_clamp() -> nn.Module:
    """Same math (clamp(x, 0) == relu(x)), other ONNX op types (Clip instead of Relu)."""
    m = zoo.tiny_cnn()
    m.stem[2] = Clamp0()
    m.block1.relu = Clamp0()
    m.block2.relu = Clamp0()
    return m


def tf_deeper() -> nn.Module:
    """A PR that appends an encoder block: `blocks.2`'s 11 layers and 12 tensors are new, before `norm`."""
    return zoo.init_by_name(zoo.TinyTransformer(depth=3))


class AuxCNN(zoo.TinyCNN):
    """A second head: the model returns `(fc(f), aux(f))` where it returned `fc(f)`, whose values hold."""

    def __init__(self):
        super().__init__()
        self.aux = nn.Linear(16, 4)

    def forward(self, x):
        f = self.drop(torch.flatten(self.pool(self.block2(self.block1(self.stem(x)))), 1))
        return self.fc(f), self.aux(f)


def cnn_aux_output() -> nn.Module:
    return zoo.init_by_name(AuxCNN())


class Offset(nn.Module):
    """a: Linear whose output rides on a large offset; norm removes the offset; head reads it."""

    def __init__(self, scale: float = 0.0):
        super().__init__()
        self.a = nn.Linear(16, 64)
        self.norm = nn.LayerNorm(64, elementwise_affine=False)
        self.head = nn.Linear(64, 4)
        with torch.no_grad():
            self.a.bias.fill_(3000.0)
            self.a.weight.mul_(1 + scale)

    def forward(self, x):
        return self.head(self.norm(self.a(x)))


def offset_base() -> nn.Module:
    return Offset()


def offset_tiny_change() -> nn.Module:
    # a's weights scaled by 1 + 1e-6: a's output moves by ~2e-10 relative (under the 1e-9 limit,
    # the 3000 offset dominates its norm); the LayerNorm removes the offset and shows ~2e-8.
    return Offset(1e-6)


# Helpers ---------------------------------------------------------------------------------

class Scaled(nn.Module):
    """tiny-cnn behind an input scale held as a buffer, in the state dict or not (statistics a factory
    reads from a file, a rotary ``inv_freq``): the forward reads it either way."""

    def __init__(self, scale: float, persistent: bool, eps: float = 1e-5):
        super().__init__()
        self.register_buffer("scale", torch.full((1, 3, 1, 1), scale), persistent=persistent)
        self.net = zoo.tiny_cnn()
        self.net.block1.bn2.eps = eps

    def forward(self, x):
        return self.net(x * self.scale)


def _scaled(persistent: bool, scale: float = 1.0, eps: float = 1e-5):
    return lambda: Scaled(scale, persistent, eps)


scaled_kept, scaled_kept_moved, scaled_kept_eps = (_scaled(True, *a) for a in ((), (1.001,), (1.0, 1e-3)))
scaled_free, scaled_free_moved, scaled_free_eps = (_scaled(False, *a) for a in ((), (1.001,), (1.0, 1e-3)))


ROOT = Path(__file__).resolve().parents[2]
INPUTS = {"tiny-cnn": '[{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]',
          "tiny-transformer": '[{ name = "x", shape = [2, 8, 16], dtype = "float32" }]',
          "offset": '[{ name = "x", shape = [4, 16], dtype = "float32" }]'}


def _config(tmp: Path, model: str, factory: str, baseline_dir: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    import faults  # tests/e2e/faults.py: the fault factories test_gate.py uses

    shutil.copy(Path(faults.__file__), tmp / "faults.py")
    shutil.copy(Path(__file__), tmp / "hint_factories.py")
    path = tmp / "parity-gate.toml"
    path.write_text(f'baseline-dir = "{baseline_dir.as_posix()}"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n'
                    f'\n[[models]]\nname = "{model}"\nfactory = "{factory}"\ninputs = {INPUTS[model]}\n')
    return path


def check(tmp: Path, model: str, factory: str, baseline_dir: Path = ROOT / "baselines") -> dict:
    from gate import commands
    from gate.config import load_config

    cfg = load_config(_config(tmp, model, factory, baseline_dir))
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    json.dumps([m["hints"] for m in report["models"]], allow_nan=False)  # hints are plain, finite JSON
    return report


def baseline(tmp: Path, model: str, factory: str) -> Path:
    from gate import commands
    from gate.config import load_config

    cfg = load_config(_config(tmp, model, factory, tmp / "baselines"))
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp / "baselines"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """Baselines of the unchanged examples made here: the hints compare with a reference taken on
    this machine, so values that must be zero are zero on any CPU (the committed baselines come
    from another host, whose float64 rounding differs in the last bits)."""
    tmp = tmp_path_factory.mktemp("fresh")
    for model in ("tiny-cnn", "tiny-transformer"):
        baseline(tmp, model, f"examples.zoo:{model.replace('-', '_')}")
    return tmp / "baselines"


def step(report: dict) -> str:
    """The model's next step as the console words it, from the report as a file holds it."""
    from gate.render.next_steps import TEXT, step_words
    from gate.verdict.report_file import parse_report

    return step_words(parse_report(json.dumps(report).encode(), "report.json").models[0], TEXT)


def hints(report: dict, kind: str, provider: str | None = None) -> list[dict]:
    return [h for h in report["models"][0]["hints"] if h["kind"] == kind and provider in (None, h["provider"])]


# Tests -----------------------------------------------------------------------------------


def test_weights_change_is_a_model_change_of_the_weights_introduced_at_the_layer(tmp_path, fresh):
    report = check(tmp_path, "tiny-cnn", "faults:cnn_weight_1e3", fresh)
    (h,) = hints(report, "model-change")
    assert (h["layer"], h["provider"]) == ("block2.conv1", "torch-cpu")
    ev = h["evidence"]
    assert ev["cause"] == "weights" and ev["weights_changed"] is True
    assert ev["weights_digest_baseline"] != ev["weights_digest_now"]
    # The baseline records a digest per tensor: the hint names the one that changed.
    assert ev["tensors_changed"] == ["block2.conv1.weight"]
    assert h["message"].endswith("the model changed, its weights changed: tensor `block2.conv1.weight`")
    assert step(report).startswith("the model's weights changed and its code runs the same operations (its "
                                   "float64 reference moved first at `block2.conv1`).")
    assert not hints(report, "runtime-change")
    # A uniform 1e-3 scale is the size of a cast error, but it is biased: not precision loss.
    assert not hints(report, "precision-loss")
    # Introduced at the layer model-change names (every earlier layer clean): said once, there.
    (ref,) = [p for p in report["models"][0]["providers"] if p["role"] == "reference"]
    drift = [(r["layer"], r["value"]) for r in ref["layers"]]
    at = [n for n, _ in drift].index("block2.conv1")
    assert drift[at][1] > 1e-4 and at > 0 and max(v for _, v in drift[:at]) <= REFERENCE_NOISE
    assert not hints(report, "introduced-vs-inherited")


def test_hyperparameter_change_is_a_model_change_of_the_code(tmp_path, fresh):
    """Twin of the new layers below: no layer is new, so the first layer that moved is named."""
    report = check(tmp_path, "tiny-cnn", "faults:cnn_bn_eps", fresh)
    (h,) = hints(report, "model-change")
    assert h["layer"] == "block1.bn2"
    assert h["evidence"]["cause"] == "code" and h["evidence"]["weights_changed"] is False
    assert h["message"].startswith("the float64 reference moved first at `block1.bn2`")
    assert "ahead" not in h["evidence"]
    assert "its code changed: the weights are the baseline's" in h["message"]
    assert step(report).startswith("the model changed (its float64 reference moved first at `block1.bn2`).")
    assert not hints(report, "precision-loss")


def test_new_layers_before_the_first_moved_layer_are_the_change_named(tmp_path, fresh):
    """A block appended: the reference moves first at `norm`, after it; the hint and the step name the new
    layers first, and the new tensors as new (the code changed), never as weights that changed."""
    report = check(tmp_path, "tiny-transformer", "hint_factories:tf_deeper", fresh)
    (h,) = hints(report, "model-change")
    assert h["layer"] == "norm" and h["evidence"]["cause"] == "code", h["message"]
    assert h["evidence"]["ahead"] == {"new": 11, "first_new": "blocks.2.norm1", "gone": 0, "first_gone": "",
                                      "output": False}
    assert "tensors_changed" not in h["evidence"] and len(h["evidence"]["tensors_new_or_gone"]) == 12
    said = h["message"]
    assert said.startswith("the model changed: 11 new layers (first: `blocks.2.norm1`) run before `norm`, "
                           "where the float64 reference moved first (reference-drift "), said
    assert said.endswith("; its code changed: 12 new tensors (4 of blocks.2.attn, 4 of blocks.2.mlp, "
                         "4 of blocks.2)"), said
    assert step(report).startswith("the model changed: 11 new layers (first: `blocks.2.norm1`) run before "
                                   "`norm`, where its float64 reference moved first. If that is intended")
    (note,) = [a["message"] for a in report["models"][0]["audits"] if "structure changed" in a["message"]]
    assert "11 new layers since the baseline (blocks.2.norm1, blocks.2.attn.qkv, blocks.2.attn.merge, …) " \
           "are not compared" in note, note


def test_a_new_model_output_is_named_as_new_not_as_a_move(tmp_path, fresh):
    """`(model)` became `(model)[0]` (its values held) and `(model)[1]` is new: nothing moved."""
    report = check(tmp_path, "tiny-cnn", "hint_factories:cnn_aux_output", fresh)
    (h,) = hints(report, "model-change")
    assert h["layer"] == "(model)[1]" and h["evidence"]["ahead"]["output"] is True, h["message"]
    assert h["message"] == ("the model changed: a new model output `(model)[1]`; its code changed: 2 new "
                            "tensors (`aux.bias`, `aux.weight`)")
    assert step(report).startswith("the model changed: a new model output `(model)[1]`. If that is intended")


def test_transpose_is_a_layout_hint_from_fingerprints_alone(tmp_path, fresh):
    report = check(tmp_path, "tiny-transformer", "faults:tf_transpose", fresh)
    (h,) = hints(report, "layout", "torch-cpu")
    assert h["layer"] == "blocks.0.attn.merge"
    ev = h["evidence"]
    assert ev["max_relative_stat_difference"] <= 1e-9 and ev["relative_distance"] > 0.1


def test_nan_origin_per_provider(tmp_path, fresh):
    report = check(tmp_path, "tiny-cnn", "faults:cnn_nan", fresh)
    found = {(h["provider"], h["evidence"]["precision"]): h for h in hints(report, "nonfinite-origin")}
    assert found[("torch-cpu", "float64")]["layer"] == "block1.conv2"
    assert found[("torch-cpu", "float32")]["layer"] == "block1.conv2"
    # On ONNX Runtime the conv is folded into its BatchNorm: the first value it has is bn2's.
    assert found[("CPUExecutionProvider", "float32")]["layer"] == "block1.bn2"
    assert found[("torch-cpu", "float64")]["evidence"]["nan"] > 0
    assert found[("torch-cpu", "float64")]["evidence"]["baseline_reference_first"] is None


@pytest.mark.parametrize(("factory", "dtype"), [("cnn_fp16_conv", "float16"), ("cnn_bf16_conv", "bfloat16")])
def test_a_cast_in_the_model_is_precision_loss_of_that_dtype(tmp_path, factory, dtype, fresh):
    """The float64 reference promotes the model's own cast (it stays the math); the runtimes run
    the cast as written, so their error grows there by that dtype's rounding, and the hints say so. The
    cast itself is the model change named first (`casts`), ahead of the runtimes it explains."""
    report = check(tmp_path, "tiny-cnn", f"hint_factories:{factory}", fresh)
    first = report["first_regression"]
    assert (first["layer"], first["provider"], first["check"]) == ("block2.conv1", "(model as given)", "casts")
    assert report["models"][0]["reference"]["promoted"] == {"block2.conv1": 1}
    for provider in ("torch-cpu", "CPUExecutionProvider"):
        (h,) = hints(report, "precision-loss", provider)
        assert h["layer"] == "block2.conv1" and h["evidence"]["dtype"] == dtype
        assert 1 / 3 <= h["evidence"]["ratio"] <= 3
    (h,) = hints(report, "model-change")
    assert h["evidence"]["cause"] == "casts" and h["layer"] == "block2.conv1"
    assert h["evidence"]["changes"] == {"block2.conv1": {"baseline": 0, "now": 1}}
    assert all("casts to a lower precision at or before this layer" in h["message"]
               for h in hints(report, "runtime-change"))


def test_rounded_weights_are_a_weight_change_not_a_cast_to_look_for(tmp_path, fresh):
    """The twin of the cast above: weights rounded in a checkpoint move the float64 reference by about a
    cast's error, without the norm shift of a scale. The code is unchanged, so no cast explains its
    drift: the weight change is the one mark, naming the tensor, and no hint sends the reader to look
    for autocast or an EP setting."""
    report = check(tmp_path, "tiny-cnn", "hint_factories:cnn_bf16_weights", fresh)
    first = report["first_regression"]
    assert (first["layer"], first["provider"]) == ("block2.conv1", "torch-cpu")
    assert first["check"] == "reference-drift"
    (h,) = hints(report, "model-change")
    assert h["evidence"]["cause"] == "weights" and h["evidence"]["tensors_changed"] == ["block2.conv1.weight"]
    assert not hints(report, "precision-loss")
    assert not hints(report, "introduced-vs-inherited")  # introduced where model-change says


def test_a_cast_only_in_the_exported_graph_is_a_runtime_change(tmp_path, fresh):
    report = check(tmp_path, "tiny-cnn", "hint_factories:cnn_onnx_only_fp16", fresh)
    first = report["first_regression"]
    # The Cast stops the Conv+BN fusion: the conv is observable now, has no baseline value, and
    # is judged against the floor, so the gate names it rather than the BatchNorm after it.
    assert (first["provider"], first["layer"]) == ("CPUExecutionProvider", "block2.conv1")
    assert not hints(report, "model-change")
    (rc,) = hints(report, "runtime-change")
    assert rc["provider"] == "CPUExecutionProvider" and rc["evidence"]["reference_moved"] is False
    assert rc["evidence"]["weights_changed"] is False
    (pl,) = hints(report, "precision-loss")
    assert pl["provider"] == "CPUExecutionProvider" and pl["evidence"]["dtype"] == "float16"
    graph = hints(report, "export-graph-change")
    assert any("Cast" in h["evidence"].get("op_types_added", []) for h in graph)
    assert any(["block2.conv1", "folded", "ok"] in h["evidence"].get("changes", []) for h in graph)
    (p,) = hints(report, "introduced-vs-inherited", "CPUExecutionProvider")
    assert p["evidence"]["origin"] == "block2.conv1"


def test_sub_threshold_change_amplified_downstream_is_inherited(tmp_path):
    base = baseline(tmp_path, "offset", "hint_factories:offset_base")
    report = check(tmp_path, "offset", "hint_factories:offset_tiny_change", base)
    first = report["first_regression"]
    assert (first["provider"], first["layer"]) == ("torch-cpu", "norm")
    (p,) = hints(report, "introduced-vs-inherited", "torch-cpu")
    ev = p["evidence"]
    assert ev["verdict"] == "inherited" and ev["origin"] == "a" and ev["first_regressed"] == "norm"
    series = dict(ev["series"])
    assert 1e-12 < series["a"] < 1e-9 < series["norm"]
    assert "inherited" in p["message"] and "a" in p["message"]


def test_same_math_other_ops_passes_and_reports_the_graph_change(tmp_path, fresh):
    report = check(tmp_path, "tiny-cnn", "hint_factories:cnn_relu_as_clamp", fresh)
    assert report["verdict"] == "pass", report["first_regression"]
    (h,) = [h for h in hints(report, "export-graph-change") if h["provider"] == "(export)"]
    assert "Relu" in h["evidence"]["op_types_removed"] and h["evidence"]["op_types_added"]
    assert "op types added: " in h["message"] and "op types removed: Relu" in h["message"]
    assert not hints(report, "model-change")


@pytest.mark.parametrize("held", ["kept", "free"])
def test_a_changed_buffer_is_named_as_weights_in_the_state_dict_or_not(tmp_path, held):
    """A buffer the forward reads changed (only the file it is read from did): the weights changed, named,
    whether the state dict holds it or not. Twin: the same model's eps changed, its buffer not: code."""
    recorded = baseline(tmp_path, "tiny-cnn", f"hint_factories:scaled_{held}")
    report = check(tmp_path, "tiny-cnn", f"hint_factories:scaled_{held}_moved", recorded)
    (h,) = hints(report, "model-change")
    assert h["evidence"]["cause"] == "weights" and h["evidence"]["tensors_changed"] == ["scale"], h
    assert h["message"].endswith("its weights changed: tensor `scale`")
    report = check(tmp_path, "tiny-cnn", f"hint_factories:scaled_{held}_eps", recorded)
    (h,) = hints(report, "model-change")
    assert h["evidence"]["cause"] == "code" and h["evidence"]["weights_changed"] is False, h


def test_unchanged_model_has_no_hints(tmp_path, fresh):
    report = check(tmp_path, "tiny-transformer", "examples.zoo:tiny_transformer", fresh)
    assert report["verdict"] == "pass"
    assert report["models"][0]["hints"] == []


# Unit level: the two fingerprint-only tests behind the hints, on real fingerprints -----------


def test_expected_cast_error_matches_a_real_round_trip():
    from gate.fingerprint import fingerprint, relative_error
    from gate.verdict.hints.precision import _bf16, expected_cast

    rng = np.random.default_rng(0)
    for x in (rng.standard_normal(50_000), np.maximum(rng.standard_normal(50_000), 0) * 7.0,
              rng.standard_exponential(50_000) * 1e-3):
        fp = fingerprint(x)
        for dtype, cast in (("float16", lambda a: a.astype(np.float16).astype(np.float64)), ("bfloat16", _bf16)):
            measured = relative_error(fingerprint(cast(x)), fp)
            assert 0.5 < expected_cast(fp, dtype)[0] / measured < 2, (dtype, measured)


def test_same_distribution_sees_a_permutation_not_a_scale():
    from gate.fingerprint import fingerprint
    from gate.verdict.hints.layout import same_distribution

    x = np.random.default_rng(1).standard_normal((4, 16, 8, 8))
    assert same_distribution(fingerprint(x.transpose(0, 1, 3, 2).copy()), fingerprint(x), 1e-9)[0]
    assert not same_distribution(fingerprint(x * (1 + 1e-6)), fingerprint(x), 1e-9)[0]

"""Sweeps in the config: expansion into named cases (vars, dims, templates, ``cases``), ``include``,
skips and pairs, and one-line errors naming the file and key; the baseline set file as untrusted
input."""

from __future__ import annotations

import random

import msgpack
import pytest
import zstandard

from gate.config import load_config
from gate.errors import ConfigError, FormatError
from gate.formats.baseline.sets import decode_set, empty_set, encode_set
from tests.support.baseline_docs import make_fp

HEAD = 'providers = ["torch-cpu", "CPUExecutionProvider"]\n'
SWEEP = """
[[sweeps]]
name = "conv"
module = "torch.nn.Conv1d"
args = [4, "{out}", 3]
kwargs = { padding_mode = "{pad}", padding = 1 }
vars = { out = [4, 8], pad = ["zeros", "reflect"] }
dims = { B = [1, 2], L = 16 }
inputs = [{ name = "x", shape = ["B", 4, "L"] }]
"""


def load(tmp_path, text):
    path = tmp_path / "parity-gate.toml"
    path.write_text(HEAD + text)
    return load_config(path)


def test_vars_and_dims_expand_into_named_cases_with_filled_templates(tmp_path):
    cfg = load(tmp_path, SWEEP)
    names = [m.name for m in cfg.models]
    assert len(names) == 8 and names[0] == "conv.out4.zeros.b1" and "conv.out8.reflect.b2" in names
    case = next(m for m in cfg.models if m.name == "conv.out8.reflect.b2")
    assert case.sweep.target == "torch.nn.Conv1d" and case.sweep.args == (4, 8, 3)  # "{out}" alone keeps the int
    assert dict(case.sweep.kwargs) == {"padding_mode": "reflect", "padding": 1}
    assert case.inputs[0].shape == (2, 4, 16) and case.repeats == 5
    assert [s.name for s in cfg.sweeps] == ["conv"] and cfg.sweep_of(case).name == "conv"
    assert [m.name for m in cfg.select_models(["conv"])] == names  # a sweep's name selects its cases


def test_cases_restrict_the_product_and_include_splits_suites(tmp_path):
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "conv.toml").write_text(SWEEP + 'cases = [{ out = 4, pad = "zeros" }]\n')
    cfg = load(tmp_path, 'include = ["sweeps/*.toml"]\n')
    assert [m.name for m in cfg.models] == ["conv.out4.zeros.b1", "conv.out4.zeros.b2"]


def test_skips_match_cases_within_their_sweep_and_say_why(tmp_path):
    cfg = load(tmp_path, SWEEP + 'skip = [{ case = "*.reflect.*", provider = "CPU*", reason = "no reflect pad" }]\n')
    assert cfg.skip_reason("conv.out4.reflect.b1", "CPUExecutionProvider") == "skipped by sweep `conv`: no reflect pad"
    assert cfg.skip_reason("conv.out4.reflect.b1", "torch-cpu") is None
    assert cfg.skip_reason("conv.out4.zeros.b1", "CPUExecutionProvider") is None


@pytest.mark.parametrize(("extra", "message"), [
    ('skip = [{ case = "*" }]\n', "sweeps[1].skip[1].reason"),
    ('skip = [{ case = "*", reason = " " }]\n', "say why the case is skipped"),
    ('pair = { left = "zeros", right = "circular" }\n', "sweeps[1].pair.right"),
    ('anchor = "OpenVINOExecutionProvider"\n', "anchor"),
    ('repeats = 0\n', "sweeps[1].repeats"),
    ('cases = [{ out = 5 }]\n', "no case of the sweep matches `cases`"),
    ('typo = 1\n', "typo"),
])
def test_bad_sweeps_are_one_line_naming_file_and_key(tmp_path, extra, message):
    with pytest.raises(ConfigError) as err:
        load(tmp_path, SWEEP + extra)
    text = str(err.value)
    assert "\n" not in text and "parity-gate.toml" in text and message in text


def test_a_sweeps_input_range_is_checked_as_a_models(tmp_path):
    """An integer input's bounds are whole numbers (drawn as integers), in a sweep as in a model."""
    text = SWEEP.replace('shape = ["B", 4, "L"] }',
                         'shape = ["B", 4, "L"], dtype = "int64", low = 0.5, high = 2.5 }')
    with pytest.raises(ConfigError, match=r"sweeps\[1\]\.inputs\[1\]\.low`: must be a whole number"):
        load(tmp_path, text)
    assert load(tmp_path, text.replace("0.5", "0").replace("2.5", "3"))  # twin: whole bounds load


def test_a_sweep_and_a_model_may_not_share_a_name(tmp_path):
    model = '[[models]]\nname = "conv"\nfactory = "examples.zoo:tiny_cnn"\ninputs = [{ name = "x", shape = [1, 3, 8, 8] }]\n'
    with pytest.raises(ConfigError, match="conv"):
        load(tmp_path, model + SWEEP)
    with pytest.raises(ConfigError, match="include.*matches no file"):
        load(tmp_path, 'include = ["nothing/*.toml"]\n')


def case_doc(name: str) -> dict:
    fp = make_fp((2,), n_quantiles=2, sketch_width=2, rng=random.Random(0), dtype="float32")
    digest = "0" * 64
    meta = {"parity_gate": "0", "torch": "0", "onnx": "0", "onnxruntime": "0", "onnxscript": None,
            "exporter": "dynamo", "export_fallback": None, "opset": 18, "inputs_digest": digest,
            "weights_digest": digest, "graph_digest": digest,
            "machine": {"platform": "p", "cpu": "c", "python": "3"},
            "fingerprint": {"sketch_width": 2, "sketch_seed": 1, "quantiles": [0.0, 1.0]}}
    return {"format": "parity-gate/baseline", "version": 1, "model": name, "meta": meta,
            "reference": {"device": "cpu", "dtype": "float64"},
            "layers": [{"name": "(model)", "type": "Op", "fp": fp}], "providers": {}}


def test_a_set_file_round_trips_and_hostile_sets_are_one_line():
    doc = empty_set("act")
    doc["cases"] = {"act.b": case_doc("act.b"), "act.a": case_doc("act.a")}
    data = encode_set(doc)
    assert encode_set(doc) == data  # same document, same bytes
    assert list(decode_set(data, "s")["cases"]) == ["act.a", "act.b"]  # canonical order

    def hostile(mutate) -> str:
        raw = msgpack.unpackb(zstandard.decompress(data), raw=False)
        mutate(raw)
        packed = zstandard.ZstdCompressor(write_content_size=True).compress(msgpack.packb(raw, use_bin_type=True))
        with pytest.raises(FormatError) as err:
            decode_set(packed, "b/act.msgpack.zst")
        assert "\n" not in str(err.value) and "b/act.msgpack.zst" in str(err.value)
        return str(err.value)

    assert "is 'act.a', not the case's name" in hostile(lambda d: d["cases"].__setitem__("act.b", case_doc("act.a")))
    assert "cases['act.a'].layers[0].fp" in hostile(lambda d: d["cases"]["act.a"]["layers"][0]["fp"].update(count=3))
    assert "newer parity-gate" in hostile(lambda d: d.update(version=3))
    assert "not a parity-gate baseline set" in hostile(lambda d: d.update(format="parity-gate/baseline"))


def test_constructor_arguments_may_be_constructed_objects(tmp_path):
    import torch

    from gate.model.sweep import build_case

    cfg = load(tmp_path, """
[[sweeps]]
name = "block"
module = "torch.nn.Sequential"
args = [{ new = "torch.nn.Linear", args = [8, "{width}"] }, { new = "torch.nn.{act}" }]
vars = { act = ["ReLU", "GELU"], width = [4] }
inputs = [{ name = "x", shape = [2, 8], dtype = "{dtype}" }]
dims = { dtype = "float32" }
""")
    case = next(m for m in cfg.models if m.name == "block.gelu")
    module = build_case(case, tmp_path)
    assert [type(m).__name__ for m in module] == ["Linear", "GELU"] and module[0].out_features == 4
    assert module(torch.ones(2, 8)).shape == (2, 4)
    ref = load(tmp_path, """
[[sweeps]]
name = "cast"
op = "torch.Tensor.to"
args = [{ ref = "torch.float64" }]
inputs = [{ name = "x", shape = [3] }]
""")
    assert build_case(ref.models[0], tmp_path)(torch.ones(3)).dtype == torch.float64

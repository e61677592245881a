"""Configuration: the contract's keys, and one-line errors naming file and key."""

from __future__ import annotations

import pytest

from gate.config import Tolerance, canonical_provider, find_config, load_config
from gate.errors import ConfigError

BASE = """
[tool.parity-gate]
providers = ["torch-cpu", "cpu", { name = "OpenVINOExecutionProvider", options = { device_type = "CPU" } }]

[[tool.parity-gate.models]]
name = "tiny-cnn"
factory = "examples.zoo:tiny_cnn"
inputs = [{ name = "x", shape = [2, 3, 32, 32], dtype = "float32" }]
"""


def write(tmp_path, text, name="pyproject.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_contract_config_loads(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    assert [p.name for p in cfg.providers] == ["torch-cpu", "CPUExecutionProvider", "OpenVINOExecutionProvider"]
    assert cfg.providers[2].options == {"device_type": "CPU"}
    assert cfg.baseline_dir == tmp_path / "baselines"
    (model,) = cfg.models
    assert model.inputs[0].shape == (2, 3, 32, 32) and model.exporter == "dynamo" and model.seed == 0


def test_find_config_prefers_pyproject_section(tmp_path):
    write(tmp_path, "[tool.other]\n")
    write(tmp_path, BASE.replace("[tool.parity-gate]", "").replace("tool.parity-gate.", ""), "parity-gate.toml")
    assert find_config(None, tmp_path).name == "parity-gate.toml"
    write(tmp_path, BASE)
    assert find_config(None, tmp_path).name == "pyproject.toml"


@pytest.mark.parametrize("edit, message", [
    (("name = \"tiny-cnn\"", "name = \"Tiny CNN\""), "`tool.parity-gate.models[1].name`: `Tiny CNN` is not a valid model name"),
    (("name = \"tiny-cnn\"", "name = \"../evil\""), "is not a valid model name"),
    (("factory = \"examples.zoo:tiny_cnn\"", "factory = \"examples.zoo\""), "model `tiny-cnn`: `tool.parity-gate.models[1].factory`: `examples.zoo` is not of the form"),
    (("dtype = \"float32\"", "dtype = \"float8\""), "model `tiny-cnn`: `tool.parity-gate.models[1].inputs[1].dtype`: unsupported dtype `float8`"),
    (("shape = [2, 3, 32, 32]", "shape = [2, -3]"), "model `tiny-cnn`: `tool.parity-gate.models[1].inputs[1].shape`: expected an array of non-negative integers"),
    (("providers = [", "provders = ["), "`tool.parity-gate.provders`: unknown key"),
    (("\"cpu\"", "\"tpu\""), "unknown provider `tpu`"),
    (("inputs = [", "opset = \"18\"\ninputs = ["), "model `tiny-cnn`: `tool.parity-gate.models[1].opset`: expected an integer, got a string"),
    (("inputs = [", "tolerance = { growth = -1 }\ninputs = ["), "model `tiny-cnn`: `tool.parity-gate.models[1].tolerance.growth`: must be >= 0"),
    (("inputs = [{ name = \"x\", shape = [2, 3, 32, 32], dtype = \"float32\" }]", "inputs = []"), "no inputs declared"),
    # values the parser took and a later step crashed on or drew Inf from: a seed torch refuses, a bound
    # the dtype cannot hold, an empty range, two inputs of one name
    (("providers = [", "seed = -1\nproviders = ["), "`tool.parity-gate.seed`: must be >= 0"),
    (("inputs = [", "seed = 18446744073709551616\ninputs = ["),
     "`tool.parity-gate.models[1].seed`: must be < 2**62"),
    (("dtype = \"float32\"", "dtype = \"float32\", low = -inf"),
     "`tool.parity-gate.models[1].inputs[1].low`: must be within"),
    (("dtype = \"float32\"", "dtype = \"float32\", low = nan"),
     "`tool.parity-gate.models[1].inputs[1].low`: must be within"),
    (("dtype = \"float32\"", "dtype = \"float16\", high = 1e10"),
     "inputs[1].high`: must be within what float16 holds"),
    (("dtype = \"float32\"", "dtype = \"int64\", high = 1e30"),
     "inputs[1].high`: must be within what int64 holds"),
    (("dtype = \"float32\"", "dtype = \"int64\", low = 200"), "inputs[1].low`: [low, high) is empty"),
    # integers are drawn whole: 1.2..1.8 would be 1..1 (empty), 0.5..2.5 would draw 0, below its low
    (("dtype = \"float32\"", "dtype = \"int64\", low = 1.2, high = 1.8"),
     "inputs[1].low`: must be a whole number for an input of int64, got 1.2"),
    (("dtype = \"float32\"", "dtype = \"bool\", high = 1.5"), "inputs[1].high`: must be a whole number"),
    (("dtype = \"float32\"", "dtype = \"bool\", low = 2"),
     "inputs[1].low`: [low, high) is empty or too wide: [2, 2)"),
    (("dtype = \"float32\" }", "dtype = \"float32\" }, { name = \"x\", shape = [1] }"),
     "`tool.parity-gate.models[1].inputs[2].name`: `x`: each input needs a name of its own"),
    # NaN passes a `< 0` test: the latency gate, the worker's timeout would be off, unsaid
    (("providers = [", "max-slowdown = nan\nproviders = ["),
     "`tool.parity-gate.max-slowdown`: must be >= 0, got nan"),
    (("providers = [", "max-slowdown = -0.5\nproviders = ["),
     "`tool.parity-gate.max-slowdown`: must be >= 0"),
    (("providers = [", "isolation = { timeout = nan }\nproviders = ["),
     "`tool.parity-gate.isolation.timeout`: must be > 0, got nan"),
])
def test_bad_config_names_file_and_key(tmp_path, edit, message):
    path = write(tmp_path, BASE.replace(*edit))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_float_keys_take_their_limits_and_infinity(tmp_path):
    """Zero where it is the limit, and Inf (no limit), stay accepted beside the NaN refused."""
    text = BASE.replace("providers = [", "max-slowdown = 0\nisolation = { timeout = inf }\nproviders = [")
    cfg = load_config(write(tmp_path, text))
    assert cfg.max_slowdown == 0.0 and cfg.isolation.timeout_s == float("inf")


def test_invalid_toml(tmp_path):
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(write(tmp_path, "[tool.parity-gate\n"))


def test_layer_tolerances_later_rules_win(tmp_path):
    text = BASE + 'tolerance = { floor = 1e-5 }\nlayer-tolerances = [{ layers = "block*", growth = 4 }, ' \
                  '{ layers = "block1.*", growth = 8, reference = 1e-6 }]\n'
    (model,) = load_config(write(tmp_path, text)).models
    assert model.tolerance_for("stem") == Tolerance(floor=1e-5)
    assert model.tolerance_for("block2.conv1") == Tolerance(floor=1e-5, growth=4.0)
    assert model.tolerance_for("block1.conv1") == Tolerance(floor=1e-5, growth=8.0, reference=1e-6)


def test_layer_tolerances_rules_that_match_no_layer_are_named_by_key(tmp_path):
    text = BASE + 'layer-tolerances = [{ layers = "grad:block*", growth = 4 }, ' \
                  '{ layers = "", floor = 1e-5 }, { layers = "stem_1", floor = 1e-5 }, ' \
                  '{ layers = "block?.*", floor = 1e-5 }]\n'
    (model,) = load_config(write(tmp_path, text)).models
    # a gradient's name is a layer's like any other; an empty glob matches none
    unmatched = model.unmatched(["stem", "block1.conv1", "grad:block1.conv1.weight"])
    assert [(r.pattern, r.where) for r in unmatched] == [
        ("", "tool.parity-gate.models[1].layer-tolerances[2].layers"),
        ("stem_1", "tool.parity-gate.models[1].layer-tolerances[3].layers")]


def test_provider_aliases_are_canonicalised():
    assert canonical_provider("cuda") == "CUDAExecutionProvider"
    # an EP name in another case is that EP, never an absent one whose check is skipped; an EP the gate
    # does not know (a plugin's) keeps its name
    for typed in ("CpuExecutionProvider", "cpuexecutionprovider"):
        assert canonical_provider(typed) == "CPUExecutionProvider"
    assert canonical_provider("OpenVinoExecutionProvider") == "OpenVINOExecutionProvider"
    assert canonical_provider("MyPluginExecutionProvider") == "MyPluginExecutionProvider"
    assert canonical_provider("TensorrtExecutionProvider") == "TensorrtExecutionProvider"


def test_batch_sizes_and_input_sets_expand_into_cases(tmp_path):
    text = BASE.replace('inputs = [', 'batch-sizes = [1, 8]\ninput-sets = 2\ninputs = [')
    models = load_config(write(tmp_path, text)).models
    assert [m.name for m in models] == ["tiny-cnn.b1.s0", "tiny-cnn.b1.s1", "tiny-cnn.b8.s0", "tiny-cnn.b8.s1"]
    assert [m.inputs[0].shape[0] for m in models] == [1, 1, 8, 8]
    assert [m.seed for m in models] == [0, 1, 0, 1]


@pytest.mark.parametrize("edit, message", [
    ("batch-sizes = [0]", "batch-sizes`: expected an array of positive integers"),
    ("batch-sizes = [2, 2]", "a batch size is listed twice"),
    ("input-sets = 0", "input-sets`: expected 1 to 64 input sets"),
])
def test_bad_cases(tmp_path, edit, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, BASE.replace("inputs = [", f"{edit}\ninputs = [")))


@pytest.mark.parametrize("edit", ['input-shapes = [{ x = [1, 3, 8, 8] }]', "batch-sizes = [1, 2]"])
def test_case_axes_that_size_inputs_need_declared_inputs(tmp_path, edit):
    text = BASE.replace('inputs = [{ name = "x", shape = [2, 3, 32, 32], dtype = "float32" }]',
                        f'{edit}\ninputs = "examples.zoo:tiny_inputs"')
    with pytest.raises(ConfigError, match="needs declared inputs"):
        load_config(write(tmp_path, text))


def test_npz_inputs_must_exist(tmp_path):
    text = BASE.replace('inputs = [{ name = "x", shape = [2, 3, 32, 32], dtype = "float32" }]', 'inputs = "data/x.npz"')
    with pytest.raises(ConfigError, match="input file .*data/x.npz` does not exist"):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize("ref, ok", [
    ("examples.zoo:tiny_cnn", True), ("_m:_f", True), ("m:pkg.attr", True),
    ("examples.zoo", False), ("a..b:c", False), ("a.:c", False), ("1m:f", False), ("m:", False), (":f", False),
    ("m:f-g", False), ("m:f:g", False),
])
def test_init_and_the_config_accept_the_same_factory_references(tmp_path, ref, ok):
    from gate.scaffold.config_text import Input, section

    text = BASE.replace('"examples.zoo:tiny_cnn"', f'"{ref}"')
    if ok:
        load_config(write(tmp_path, text))
        section("m", ref, [Input("x", (1, 3), "float32")])
        return
    with pytest.raises(ConfigError, match="factory"):
        load_config(write(tmp_path, text))
    with pytest.raises(ConfigError, match="factory"):
        section("m", ref, [Input("x", (1, 3), "float32")])


def test_detections_key_sets_the_rule_for_a_detectors_data_dependent_outputs(tmp_path):
    from gate.config import DetectionTolerance

    (model,) = load_config(write(tmp_path, BASE)).models
    assert model.detections == DetectionTolerance(min_score=0.5, iou=0.9, score=0.01)
    text = BASE.replace("inputs = [", "detections = { min-score = 0.3, iou = 0.5, score = 0.02 }\ninputs = [")
    (model,) = load_config(write(tmp_path, text)).models
    assert model.detections == DetectionTolerance(min_score=0.3, iou=0.5, score=0.02)


@pytest.mark.parametrize("value, message", [
    ("{ iou = 0.49 }", "detections.iou`: must be >= 0.5 (boxes are matched at IoU 0.5), got 0.49"),
    ("{ min-score = 1.5 }", "detections.min-score`: must be <= 1, got 1.5"),
    ("{ score = -1 }", "detections.score`: must be >= 0"),
    ("{ minscore = 0.5 }", "detections.minscore`: unknown key"),
    ("0.5", "detections`: expected a table"),
])
def test_bad_detections_key_is_one_line_naming_it(tmp_path, value, message):
    path = write(tmp_path, BASE.replace("inputs = [", f"detections = {value}\ninputs = ["))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert message in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("table, key", [
    ('tolerance = { grwoth = 3.0 }\ninputs = [', "models[1].tolerance.grwoth"),
    ('layer-tolerances = [{ layers = "fc", flor = 1e-5 }]\ninputs = [', "models[1].layer-tolerances[1].flor"),
    ('output-tolerance = { rtl = 1e-3 }\ninputs = [', "models[1].output-tolerance.rtl"),
    ('detections = { iuo = 0.9 }\ninputs = [', "models[1].detections.iuo"),
])
def test_every_model_table_refuses_an_unknown_key_naming_it_and_the_allowed_ones(tmp_path, table, key):
    path = write(tmp_path, BASE.replace("inputs = [", table))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"model `tiny-cnn`: `tool.parity-gate.{key}`: unknown key (allowed: " in str(err.value)


def test_a_misspelt_top_level_tolerance_key_is_refused_with_the_allowed_keys(tmp_path):
    path = write(tmp_path, BASE.replace("[[tool.parity-gate.models]]", "tolerance = { grwoth = 3.0 }\n\n"
                                        "[[tool.parity-gate.models]]"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == (f"{path}: `tool.parity-gate.tolerance.grwoth`: unknown key (allowed: growth, floor, "
                              "reference, ceiling)")


def test_positions_count_from_one_and_the_model_is_named(tmp_path):
    second = BASE.split("[[tool.parity-gate.models]]")[1].replace('"tiny-cnn"', '"second"')
    path = write(tmp_path, BASE + "\n[[tool.parity-gate.models]]" + second.replace('dtype = "float32"', 'dtype = "f8"'))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: model `second`: `tool.parity-gate.models[2].inputs[1].dtype`: "
                                     "unsupported dtype `f8`")


def test_the_config_is_found_in_the_nearest_folder_above_up_to_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    deep = repo / "src" / "models"
    deep.mkdir(parents=True)
    (repo / ".git").mkdir()
    write(repo, BASE)
    assert find_config(None, deep) == repo / "pyproject.toml"
    write(repo / "src", BASE.replace("[tool.parity-gate]", "").replace("tool.parity-gate.", ""), "parity-gate.toml")
    assert find_config(None, deep) == repo / "src" / "parity-gate.toml"  # the nearest wins


def test_the_search_stops_at_the_repository_root(tmp_path):
    write(tmp_path, BASE)  # a config above the repository is not this repository's
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    with pytest.raises(ConfigError) as err:
        find_config(None, repo / "sub")
    assert str(err.value).startswith(f"no configuration found in {repo / 'sub'} or a folder above it up to the "
                                     f"repository root {repo}: ")


def test_a_printed_command_names_the_config_a_command_run_there_would_not_find(tmp_path, monkeypatch):
    """A config in a subfolder under its default name, checked from the repository root with --config:
    `update-baseline` printed without --config would fail where the check ran."""
    from gate.commands.common import config_flag

    (tmp_path / ".git").mkdir()
    (tmp_path / "ml").mkdir()
    sub = tmp_path / "ml" / "parity-gate.toml"
    sub.write_text("[models]\n")
    monkeypatch.chdir(tmp_path)
    assert config_flag(sub, tmp_path) == " --config ml/parity-gate.toml"
    # twins: run from the config's own folder, the command finds it by itself; another name always needs it
    assert config_flag(sub, tmp_path / "ml") == ""
    other = tmp_path / "ml" / "gate.toml"
    other.write_text("[models]\n")
    monkeypatch.chdir(tmp_path / "ml")
    assert config_flag(other, tmp_path / "ml") == " --config gate.toml"

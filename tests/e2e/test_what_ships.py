"""Gate what actually ships: dynamic shapes (one export for every case), post-export transforms
(float16, int8, the ONNX Runtime transformer optimizer), prebuilt ONNX files, session options,
opsets, exact metrics of the outputs, the model as the factory returned it, and selecting and
checking configs. Real exports, real ONNX Runtime, baselines written here."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch

from examples import zoo
from gate import commands
from gate.config import load_config
from gate.errors import ConfigError
from gate.formats.baseline import read_document
from gate.verdict.report_file import report_document
from tests.conftest import run_cli
from tests.support import tools

CNN_INPUT = 'inputs = [{ name = "x", shape = [2, 3, 16, 16] }]'


def config(tmp: Path, models: str, providers: str = '["torch-cpu", "CPUExecutionProvider"]') -> Path:
    shutil.copy(Path(__file__).parent / "ships_factories.py", tmp / "ships_factories.py")
    path = tmp / "parity-gate.toml"
    path.write_text(f'baseline-dir = "b"\nproviders = {providers}\n\n{models}')
    return path


def model(name: str, factory: str = "examples.zoo:tiny_cnn", inputs: str = CNN_INPUT, extra: str = "") -> str:
    return f'[[models]]\nname = "{name}"\nfactory = "{factory}"\n{inputs}\n{extra}\n'


def update(path: Path, messages: list | None = None):
    cfg = load_config(path)
    return commands.update_baseline(cfg, cfg.models, cfg.providers, messages.append if messages is not None else
                                    lambda _: None)


def check(path: Path, **kw) -> dict:
    """The JSON report, next steps and all."""
    cfg = load_config(path)
    return report_document(commands.check(cfg, cfg.models, cfg.providers, **kw))


# dynamic shapes ---------------------------------------------------------------------------

DYNAMIC = (model("cnn", extra='dynamic-shapes = { x = { 0 = "batch" } }\nbatch-sizes = [1, 2, 4]')
           + model("tf", "examples.zoo:tiny_transformer", 'inputs = [{ name = "x", shape = [2, 8, 16] }]',
                   'dynamic-shapes = { x = { 0 = "batch", 1 = "sequence" } }\nsequence-lengths = [4, 8]'))


def test_cases_with_dynamic_dimensions_share_one_export(tmp_path):
    path = config(tmp_path, DYNAMIC)
    listed = run_cli("list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip().splitlines()[-1].startswith("5 cases, 2 exports")
    assert "cnn.b4  (cnn: batch=4)  export #0" in listed.stdout and "tf.t8  (tf: length=8)  export #1" in listed.stdout
    messages: list[str] = []
    updated = update(path, messages)
    assert [u.model for u in updated] == ["cnn.b1", "cnn.b2", "cnn.b4", "tf.t4", "tf.t8"]
    assert sum("exporting to ONNX" in m for m in messages) == 2 and sum("building" in m for m in messages) == 2
    doc = read_document(tmp_path / "b" / "cnn.b4.msgpack.zst")
    assert doc["meta"]["dynamic_dims"] == {"x": {"0": "batch"}}
    assert read_document(tmp_path / "b" / "tf.t4.msgpack.zst")["meta"]["dynamic_dims"] == {"x": {"0": "batch",
                                                                                                  "1": "sequence"}}
    report = check(path)
    assert report["verdict"] == "pass", report["first_regression"]
    # one graph for all of them: the same digest, the shapes of each case in its layers
    graphs = {m["name"]: read_document(tmp_path / "b" / f"{m['name']}.msgpack.zst")["meta"]["graph_digest"]
              for m in report["models"]}
    assert len({graphs[n] for n in ("cnn.b1", "cnn.b2", "cnn.b4")}) == 1


def test_a_declared_dynamic_dimension_exported_static_fails_naming_it(tmp_path):
    path = config(tmp_path, model("cnn", extra='dynamic-shapes = { x = { 0 = "batch" } }\n'
                                              'transform = "ships_factories:freeze_batch"'))
    update(path)
    report = check(path)
    first = report["first_regression"]
    assert (first["provider"], first["check"]) == ("(export)", "dynamic-shape")
    assert "input `x` dimension 0 is static in the exported graph" in first["message"] and "`batch`" in first["message"]
    assert report["models"][0]["next_step"]["kind"] == "dynamic-shape"


def test_a_case_the_graph_kept_static_cannot_run_is_a_dynamic_shape_never_a_provider_crash(tmp_path):
    """Batch sizes 2 and 4 on one export a transform froze at batch 2: the batch-4 case fails to run on ONNX
    Runtime, and its step was "reproduce the provider's crash on that runner"; the cause is the dimension
    kept static. The case that takes the other's graph names the transform, never `None`."""
    dynamic = 'dynamic-shapes = { x = { 0 = "batch" } }\nbatch-sizes = [2, 4]'
    path = config(tmp_path, model("cnn", extra=dynamic))
    update(path)
    path.write_text(path.read_text() + 'transform = "ships_factories:freeze_batch"\n')
    b2, b4 = check(path)["models"]
    assert (b2["next_step"]["kind"], b4["next_step"]["kind"]) == ("dynamic-shape", "dynamic-shape")
    frozen = "ships_factories:freeze_batch"
    assert [m["reuse"].get("transform") for m in (b2, b4)] == [frozen, frozen], b4["reuse"]


def test_a_dimension_dynamic_in_the_baseline_that_turns_static_fails(tmp_path):
    path = config(tmp_path, model("cnn", extra='dynamic-shapes = { x = { 0 = "batch" } }'))
    update(path)
    path.write_text(path.read_text().replace('dynamic-shapes = { x = { 0 = "batch" } }', ""))
    report = check(path)
    assert report["first_regression"]["check"] == "dynamic-shape"
    said = "input `x` dimension 0 was dynamic (`batch`) in the baseline's graph and is static now, and the " \
           "config does not declare it"
    assert said in report["first_regression"]["message"]
    # the step fits the cause (declare it, or re-record a static graph), never "the ONNX graph changed"
    assert report["models"][0]["next_step"]["kind"] == "dynamic-shape"


# transforms ------------------------------------------------------------------------------

@pytest.mark.parametrize("transform, precision, removed", [("float16", "float16", 0), ("int8_dynamic", "int8", 0)])
def test_a_transform_is_what_ships_and_sets_the_precision(tmp_path, transform, precision, removed):
    path = config(tmp_path, model("cnn", extra=f'transform = "examples.transforms:{transform}"'),
                  providers='["CPUExecutionProvider"]')
    update(path)
    doc = read_document(tmp_path / "b" / "cnn.msgpack.zst")
    assert doc["meta"]["transform"] == f"examples.transforms:{transform}"
    assert doc["meta"]["graph_precision"] == precision
    (label,) = doc["providers"]["CPUExecutionProvider"]
    assert label.endswith(f":{precision}")
    report = check(path)
    assert report["verdict"] == "pass", report["first_regression"]
    cpu = report["models"][0]["providers"][1]
    assert cpu["precision"] == precision and cpu["checked"] > 10


def test_the_transformer_optimizer_fuses_layers_which_are_reported_absent_with_the_reason(tmp_path):
    tools.module("transformers")
    inputs = 'inputs = [{ name = "input_ids", shape = [1, 16], dtype = "int64", low = 0, high = 128 }]'
    path = config(tmp_path, model("bert", "examples.transformers_zoo:bert_like", inputs,
                                  'transform = "examples.transforms:bert_optimized"'), providers='["CPUExecutionProvider"]')
    update(path)
    report = check(path)
    assert report["verdict"] == "pass", report["first_regression"]
    mapping = report["models"][0]["mapping"]
    assert mapping["reasons"]["removed by the transform `examples.transforms:bert_optimized`"] >= 5
    assert mapping["mapped"] + mapping["folded"] + mapping["absent"] == mapping["layers"]


# prebuilt ONNX files -----------------------------------------------------------------------

@pytest.mark.parametrize("dynamo", [True, False])
def test_a_prebuilt_onnx_file_is_gated_against_the_pytorch_model(tmp_path, dynamo):
    torch.manual_seed(0)
    module = zoo.tiny_cnn().eval()
    x = torch.zeros(2, 3, 16, 16)
    onnx_path = tmp_path / "build" / "model.onnx"
    onnx_path.parent.mkdir()
    with torch.no_grad():
        torch.onnx.export(module, (x,), str(onnx_path), dynamo=dynamo, input_names=["x"])
    path = config(tmp_path, model("cnn", extra='artifact = "build/model.onnx"'), providers='["CPUExecutionProvider"]')
    update(path)
    report = check(path)
    assert report["verdict"] == "pass", report["first_regression"]
    entry = report["models"][0]
    assert entry["exporter"] == "artifact"
    rows = {r["layer"]: r for r in entry["providers"][1]["layers"]}
    assert rows["(model)"]["status"] == "pass" and rows["(model)"]["exact"]["max_abs"] < 1e-5
    assert rows["block1.bn2"]["status"] in ("pass", "folded")
    # the ReLU module runs twice per block: a prebuilt graph cannot tell its calls apart, and says so
    assert rows["block1.relu"]["status"] == "absent" and "cannot tell its calls apart" in rows["block1.relu"]["message"]
    assert entry["mapping"]["mapped"] >= 8


def test_a_graph_shipped_as_model_onnx_beside_its_data_at_the_root_is_gated(tmp_path):
    """onnx's own external-data writer refuses a location that exists relative to the working directory,
    so the gate's copy of any graph failed, as an internal error, in a repository that ships
    `model.onnx` and `model.onnx.data` at its root and runs the gate there."""
    torch.manual_seed(0)
    with torch.no_grad():
        torch.onnx.export(zoo.tiny_cnn().eval(), (torch.zeros(2, 3, 16, 16),), str(tmp_path / "model.onnx"),
                          dynamo=True, input_names=["x"])
    assert (tmp_path / "model.onnx.data").exists()
    config(tmp_path, model("cnn", extra='artifact = "model.onnx"') + model("exported"))
    for command in ("update-baseline", "check"):
        done = run_cli(command, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("key", ["opsets = [17, 18]", "opset = 17", 'exporter = "torchscript"'])
def test_an_artifact_with_an_export_setting_is_a_config_error(tmp_path, key):
    """`opsets = [17, 18]` beside `artifact` made two cases that gated the same opset-20 file as 17 and 18."""
    path = config(tmp_path, model("cnn", extra=f'artifact = "build/model.onnx"\n{key}'))
    name = key.split(" ")[0]
    with pytest.raises(ConfigError, match=rf"models\[1\]\.{name}`: the model gates the prebuilt `artifact`"):
        load_config(path)


ARTIFACT_NET = """import torch
from torch import nn
from torch.nn import functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.head = nn.Linear(16, 64), nn.Linear(64, 64), nn.Linear(64, 8)

    def forward(self, x):
        return self.head(torch.relu(self.fc2(F.gelu(self.fc1(x)))))


def net():
    torch.manual_seed(0)
    return Net().eval()
"""


def test_a_weight_edited_in_the_artifact_is_no_cast_to_look_for(tmp_path):
    """The shipped file's fc2 weight moved by 1e-3 in one element, the PyTorch model untouched: it fails at
    fc2 on ONNX Runtime, and no hint sends the reader to look for a float16 cast in a float32 CPU run of a
    graph that computes nothing below float32, however much the error looks like one (a cast in the graph:
    test_hints)."""
    (tmp_path / "artifact_net.py").write_text(ARTIFACT_NET)
    onnx_path = tmp_path / "build" / "net.onnx"
    onnx_path.parent.mkdir()

    def ship(edit: float) -> None:
        module = _import(tmp_path / "artifact_net.py").net()
        with torch.no_grad():
            module.fc2.weight[3, 5] += edit
            torch.onnx.export(module, (torch.randn(4, 16),), str(onnx_path), dynamo=True, input_names=["x"])

    ship(0.0)
    path = config(tmp_path, model("net", "artifact_net:net", 'inputs = [{ name = "x", shape = [4, 16] }]',
                                  'artifact = "build/net.onnx"'))
    update(path)
    ship(1e-3)
    report = check(path)
    first = report["first_regression"]
    assert (first["layer"], first["provider"]) == ("fc2", "CPUExecutionProvider")
    assert [h["kind"] for h in report["models"][0]["hints"] if h["kind"] == "precision-loss"] == []


def test_an_artifact_whose_nodes_name_no_module_says_so(tmp_path):
    """A shipped graph stripped of its nodes' metadata (as some converters do): its layers have no value
    here, and each says why (nothing maps the nodes to modules), never "no ONNX node"; the model notes once
    that the gate sees less than its baseline's runtime compared. Twin: the graph as exported maps every
    layer, with no note."""
    import onnx

    (tmp_path / "artifact_net.py").write_text(ARTIFACT_NET)
    onnx_path = tmp_path / "build" / "net.onnx"
    onnx_path.parent.mkdir()
    with torch.no_grad():
        torch.onnx.export(_import(tmp_path / "artifact_net.py").net(), (torch.randn(4, 16),), str(onnx_path),
                          dynamo=True, input_names=["x"])
    path = config(tmp_path, model("net", "artifact_net:net", 'inputs = [{ name = "x", shape = [4, 16] }]',
                                  'artifact = "build/net.onnx"'), providers='["CPUExecutionProvider"]')
    update(path)

    def checked() -> tuple[dict[str, dict], list[dict]]:
        (model,) = check(path)["models"]
        return {r["layer"]: r for r in model["providers"][1]["layers"]}, \
            [a for a in model["audits"] if a["check"] == "coverage"]

    rows, lost = checked()
    assert rows["fc2"]["status"] == "pass" and lost == []
    proto = onnx.load(str(onnx_path))
    for node in proto.graph.node:
        del node.metadata_props[:]
    onnx.save(proto, str(onnx_path))
    rows, lost = checked()
    fc2 = rows["fc2"]
    assert fc2["status"] == "absent" and "the graph's nodes name no module" in fc2["message"]
    (audit,) = lost  # one note for the model: the gate sees less than the baseline's runtime compared
    assert audit["status"] == "warn" and "no value in the graph now" in audit["message"], audit
    assert "fix what stripped or folded them" in audit["message"], audit  # not the optimizer's fusion


STALE_NET = ARTIFACT_NET.replace("""def net():
    torch.manual_seed(0)
    return Net().eval()""", """def net():
    here = Path(__file__).parent
    torch.manual_seed(int((here / "seed.txt").read_text()))
    m = Net().eval()
    with torch.no_grad():
        m.fc2.weight.mul_(float((here / "scale.txt").read_text()))
    return m""").replace("import torch\n", "from pathlib import Path\n\nimport torch\n", 1)


def test_an_artifact_that_does_not_follow_the_model_is_to_be_rebuilt_never_re_recorded(tmp_path):
    """The model's fc2 moved by 1e-4 and the prebuilt artifact was not rebuilt: the step said "if the new
    weights are intended, update-baseline", which records the stale file's error as the truth. An artifact
    built from other weights than the model's (another seed) failed only the default ceiling, and the step
    said to loosen it. Both are a stale artifact now. Twins: the artifact rebuilt, the change is the model's
    alone, to record if intended; a ceiling configured under float32's error is a limit to loosen."""
    (tmp_path / "stale_net.py").write_text(STALE_NET)  # a module name of its own: modules stay imported
    onnx_path = tmp_path / "build" / "net.onnx"
    onnx_path.parent.mkdir()

    def ship(seed: str = "0") -> None:
        (tmp_path / "seed.txt").write_text(seed)
        with torch.no_grad():
            torch.onnx.export(_import(tmp_path / "stale_net.py").net(), (torch.randn(4, 16),), str(onnx_path),
                              dynamo=True, input_names=["x"])
        (tmp_path / "seed.txt").write_text("0")

    def step() -> dict:
        return check(path)["models"][0]["next_step"]

    (tmp_path / "scale.txt").write_text("1.0")
    ship()
    path = config(tmp_path, model("net", "stale_net:net", 'inputs = [{ name = "x", shape = [4, 16] }]',
                                  'artifact = "build/net.onnx"'))
    update(path)
    text = path.read_text()
    path.write_text(text + "tolerance = { ceiling = 1e-8 }\n")  # under float32's own error: a limit to loosen
    assert step()["kind"] == "output-tolerance"
    path.write_text(text)
    (tmp_path / "scale.txt").write_text("1.0001")
    assert step()["kind"] == "artifact-differs"
    ship()
    assert step()["kind"] == "weights-changed"
    ship("1")
    (tmp_path / "scale.txt").write_text("1.0")
    update(path)
    assert step()["kind"] == "artifact-differs"


def _import(file: Path):
    spec = importlib.util.spec_from_file_location(f"shipped_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_missing_artifact_is_an_export_failure_naming_it(tmp_path):
    path = config(tmp_path, model("cnn", extra='artifact = "build/model.onnx"'), providers='["CPUExecutionProvider"]')
    report = check(path)
    assert report["verdict"] == "error"
    assert "artifact" in report["models"][0]["error"]["message"] and "does not exist" in report["models"][0]["error"]["message"]


# session options, opsets ----------------------------------------------------------------

def test_session_options_are_applied_and_recorded(tmp_path):
    options = '{ name = "CPUExecutionProvider", session-options = { graph-optimization-level = "basic", ' \
              'intra-op-threads = 1, config-entries = { "session.disable_prepacking" = "1" } } }'
    path = config(tmp_path, model("cnn"), providers=f'[{options}]')
    update(path)
    (entry,) = read_document(tmp_path / "b" / "cnn.msgpack.zst")["providers"]["CPUExecutionProvider"].values()
    assert entry["session_options"] == {"graph-optimization-level": "basic", "intra-op-threads": 1,
                                        "config-entries": {"session.disable_prepacking": "1"}}
    assert check(path)["verdict"] == "pass"
    path.write_text(path.read_text().replace('"basic"', '"all"'))
    report = check(path)
    (audit,) = report["models"][0]["providers"][1]["audits"]
    assert (audit["check"], audit["status"]) == ("session-options", "warn")


def test_opsets_expand_into_cases(tmp_path):
    path = config(tmp_path, model("cnn", extra="opsets = [17, 18]"), providers='["CPUExecutionProvider"]')
    update(path)
    report = check(path)
    assert [m["name"] for m in report["models"]] == ["cnn.o17", "cnn.o18"]
    assert [m["opset"] for m in report["models"]] == [17, 18] and report["verdict"] == "pass"


def test_an_opset_the_default_exporter_cannot_write_falls_back_never_ships_another(tmp_path):
    """A LayerNormalization has no form below opset 17: the default exporter kept opset 18 and the gate
    recorded and reported "opset 13" for a graph in 18. Now the export falls back to TorchScript, which
    writes 13, and says why. Twin: opset 18 stays the default exporter's."""
    tf = model("tf", "examples.zoo:tiny_transformer", 'inputs = [{ name = "x", shape = [2, 8, 16] }]',
               "opsets = [13, 18]")
    path = config(tmp_path, tf, providers='["CPUExecutionProvider"]')
    update(path)
    report = check(path)
    o13, o18 = report["models"]
    assert (o13["opset"], o13["exporter"], o18["opset"], o18["exporter"]) == (13, "torchscript", 18, "dynamo")
    assert "wrote opset 18, not the 13 asked" in o13["export_fallback"] and report["verdict"] == "pass"


# exact output metrics ---------------------------------------------------------------------

def test_outputs_get_exact_metrics_and_output_tolerance_gates_them(tmp_path):
    path = config(tmp_path, model("cnn"))
    update(path)
    report = check(path)
    rows = {p["name"]: {r["layer"]: r for r in p["layers"]} for p in report["models"][0]["providers"][1:]}
    exact = rows["CPUExecutionProvider"]["(model)"]["exact"]
    assert exact["count"] == 20 and 0 < exact["max_abs"] < 1e-5 and len(exact["worst_index"]) == 2
    assert "exact" not in rows["CPUExecutionProvider"]["block1.bn2"]  # outputs only
    path.write_text(path.read_text() + "output-tolerance = { rtol = 0.0, atol = 1e-12 }\n")
    report = check(path)
    first = report["first_regression"]
    assert (first["layer"], first["check"]) == ("(model)", "allclose")
    assert "allclose(rtol=0, atol=1e-12) fails on" in first["message"] and "worst at [" in first["message"]
    # Nothing changed but the tolerance: the advice names it, and no hint says an error moved.
    (m,) = report["models"]
    assert m["next_step"]["kind"] == "output-tolerance", m["next_step"]
    moved = [h for h in m["hints"] if h["kind"] in ("runtime-change", "introduced-vs-inherited")]
    assert not moved, moved


# outputs in another order -----------------------------------------------------------------

HEADS_INPUT = 'inputs = [{ name = "x", shape = [4, 8] }]'


@pytest.mark.parametrize("factory", ["heads_reordered", "heads_key_renamed", "heads_one_more_first"])
def test_outputs_in_another_order_are_what_ships_changed_and_a_key_renamed_in_place_is_not(tmp_path, factory):
    """A dict's outputs are named by key, the exported graph's by position: the same keys in another order
    change what output 0 is. A key renamed in place changes no position; an output added first fails as
    an output the baseline lacks, one mark."""
    update(config(tmp_path, model("heads", "ships_factories:heads", HEADS_INPUT)))
    report = check(config(tmp_path, model("heads", f"ships_factories:{factory}", HEADS_INPUT)))
    (m,) = report["models"]
    order = [a for a in m["audits"] if "another order" in a["message"]]
    first = report["first_regression"]
    if factory == "heads_key_renamed":
        assert report["verdict"] == "pass" and not order, m["audits"]
    elif factory == "heads_reordered":
        assert (first["check"], first["layer"]) == ("output-order", "(model)[score]"), first
        assert "`(model)[score]` is output 0, was output 1" in order[0]["message"]
        assert m["next_step"]["kind"] == "model-changed" and "update-baseline" in m["next_step"]["command"]
    else:
        assert (first["check"], first["layer"]) == ("structure", "(model)[aux]") and not order, first


# the model as given -----------------------------------------------------------------------

def test_a_wrapper_left_in_training_mode_is_noted_and_passes(tmp_path):
    path = config(tmp_path, model("cnn", "ships_factories:wrapped_cnn"))
    update(path)
    report = check(path)
    assert report["verdict"] == "pass"
    (audit,) = report["models"][0]["audits"]
    assert (audit["check"], audit["status"]) == ("training-mode", "warn") and "(model)" in audit["message"]
    assert any("1 of 21 modules were in training mode" in n
               for n in read_document(tmp_path / "b" / "cnn.msgpack.zst")["meta"]["normalizations"])


def test_a_module_left_in_training_mode_that_changes_outputs_fails_naming_it(tmp_path):
    path = config(tmp_path, model("cnn", "ships_factories:cnn_dropout_left_training"))
    update(path)
    report = check(path)
    first = report["first_regression"]
    assert (first["check"], first["layer"], first["provider"]) == ("training-mode", "drop", "(model as given)")
    assert "drop" in first["message"] and "model.eval()" in first["message"]
    step = report["models"][0]["next_step"]
    # the factory's modules, not the ONNX graph
    assert (step["kind"], step["command"], step["layer"]) == ("training-mode", None, "drop")


def test_a_forward_that_draws_random_numbers_names_the_call_and_never_offers_to_re_record(tmp_path):
    update(config(tmp_path, model("cnn", "ships_factories:cnn_no_dropout")))
    report = check(config(tmp_path, model("cnn", "ships_factories:cnn_functional_dropout")))
    (m,) = report["models"]
    assert report["verdict"] == "regressed"
    (audit,) = [a for a in m["audits"] if a["check"] == "random-draws"]
    assert "ships_factories.py:" in audit["message"] and "in forward" in audit["message"], audit
    assert (m["next_step"]["kind"], m["next_step"]["command"]) == ("random-draws", None)
    hint = next(h for h in m["hints"] if h["kind"] == "model-change")
    assert "draws them" in hint["message"] and "hyperparameter" not in hint["message"]


def test_a_model_returned_in_training_mode_is_put_in_eval_mode_and_says_so(tmp_path):
    path = config(tmp_path, model("cnn"))
    update(path)
    meta = read_document(tmp_path / "b" / "cnn.msgpack.zst")["meta"]
    assert "eval mode (the factory returned it in training mode)" in meta["normalizations"]
    assert "multi-head attention fast path off" in meta["normalizations"]


# selecting and checking configs -----------------------------------------------------------

def test_model_globs_select_every_case(tmp_path):
    config(tmp_path, DYNAMIC)
    cfg = load_config(tmp_path / "parity-gate.toml")
    assert [m.name for m in cfg.select_models(["cnn"])] == ["cnn.b1", "cnn.b2", "cnn.b4"]
    assert [m.name for m in cfg.select_models(["t*"])] == ["tf.t4", "tf.t8"]
    assert [m.name for m in cfg.select_models(["*.b2", "tf.t8"])] == ["cnn.b2", "tf.t8"]
    proc = run_cli("list", "--model", "nope*", cwd=tmp_path)
    assert proc.returncode == 2 and "no model matches `nope*` (configured: cnn, tf)" in proc.stderr


def test_validate_builds_inputs_without_running_a_model(tmp_path):
    config(tmp_path, DYNAMIC)
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # set up, and no case has a baseline yet
    assert "cnn.b4: 1 input(s), 12,288 bytes" in proc.stdout and "5 cases without a baseline" in proc.stdout
    (tmp_path / "parity-gate.toml").write_text((tmp_path / "parity-gate.toml").read_text()
                                               .replace('dynamic-shapes = { x = { 0 = "batch" } }',
                                                        'dynamic-shapes = { y = { 0 = "batch" } }'))
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "model `cnn`: `models[1].dynamic-shapes.y`: no declared input is named `y`" in proc.stderr


def test_onnx_file_of_an_artifact_is_never_half_read(tmp_path):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "model.onnx").write_bytes(b"not a protobuf")
    path = config(tmp_path, model("cnn", extra='artifact = "build/model.onnx"'), providers='["CPUExecutionProvider"]')
    report = check(path)
    assert report["models"][0]["error"]["status"] == "EXPORT_FAIL"
    assert "is not a valid ONNX model" in report["models"][0]["error"]["message"]


@pytest.mark.parametrize("factory, verdict", [("ships_factories:cnn_faulted", "regressed"),
                                              ("examples.zoo:tiny_cnn", "pass")])
def test_a_model_renamed_in_the_config_is_compared_once_its_baseline_moves_never_re_recorded_blind(
        tmp_path, factory, verdict):
    """`net` renamed `cnn` in the config, in the same change as a weight scaled by 1 + 1e-4: `cnn` has no
    baseline, and its step points at the file no model owns (move it, then check) before recording. Moved,
    the file judges the renamed model: the fault fails, noting the baseline's old name; its twin, the rename
    alone, passes with that note."""
    from gate.render import render_markdown

    update(config(tmp_path, model("net")))
    path = config(tmp_path, model("cnn", factory))
    cfg = load_config(path)
    first = commands.check(cfg, cfg.models, cfg.providers)
    (m,) = first.models
    assert m.status == "no-baseline" and [Path(p).name for p in m.unowned] == ["net.msgpack.zst"]
    text = render_markdown(first)
    assert "no configured model: if this model is its model renamed, move that file to" in text, text
    (tmp_path / "b" / "net.msgpack.zst").rename(tmp_path / "b" / "cnn.msgpack.zst")
    report = check(path)
    assert report["verdict"] == verdict, report["first_regression"]
    (note,) = [a["message"] for a in report["models"][0]["audits"] if "as model `net`" in a["message"]]
    assert "`update-baseline` records it as `cnn`" in note


def test_a_case_whose_forward_takes_another_branch_than_the_shared_graph_is_judged(tmp_path):
    """Four input sets share one export, traced on the first; the forward branches on the input's values,
    and one set takes the other branch (module `b2`, not `b`). That set is judged: the graph gives other
    values there, far past rounding, and its step says the graph differs (never a provider that failed to
    load, never a limit to loosen). Twin: the sets on the traced branch pass."""
    inputs = 'inputs = [{ name = "x", shape = [1, 8] }]'
    path = config(tmp_path, model("branchy", "ships_factories:branchy", inputs, "input-sets = 4"))
    updated = update(path)
    assert all(u.error is None for u in updated), [u.error for u in updated]
    report = check(path)
    statuses = {m["name"]: m["status"] for m in report["models"]}
    assert "pass" in statuses.values() and "regressed" in statuses.values(), statuses
    assert not [p for m in report["models"] for p in m["providers"] if p.get("error_status")]
    for m in report["models"]:
        if m["status"] == "regressed":
            assert m["next_step"]["kind"] == "graph-differs", m["next_step"]

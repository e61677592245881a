"""ONNX values mapped back to module calls, on real exports of the example models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from gate.config import InputSpec, ModelSpec
from gate.core.layers import layer_name
from gate.core.runs import OnnxSite
from gate.export import signatures
from gate.export.exporter import export
from gate.export.layermap import assign, eval_list, pick
from gate.fingerprint import fingerprint
from gate.model import torch_hooks
from gate.model.build import build
from tests.support.verdicts import fp

ROOT = Path(__file__).resolve().parents[2]


def mapped(factory: str, shape: tuple | None = None, exporter: str = "dynamo", inputs: str | None = None,
           with_built: bool = False, dynamic: dict | None = None):
    spec = ModelSpec(name="m", factory=factory, inputs=inputs or (InputSpec("x", shape),), exporter=exporter,
                     where="models[0]", dynamic_shapes=dynamic or {})
    built = build(spec, ROOT)
    exported = export(built)
    records = torch_hooks.run(built.module, built.inputs)
    sites = assign(records, exported.calls, exported.shapes, exported.available, outputs=exported.outputs)
    return (exported, records, sites, built) if with_built else (exported, records, sites)


def outputs_by_layer(built) -> dict[str, np.ndarray]:
    """Every module call's output elements, float32, named as the capture names them."""
    calls: dict[str, int] = {}
    out: dict[str, np.ndarray] = {}

    def hook(qual):
        def record(_m, _args, output):
            call = calls.get(qual, 0)
            calls[qual] = call + 1
            for element, t in torch_hooks.flatten(output):
                out[layer_name(qual, call, element)] = t.detach().numpy().copy()
        return record

    handles = [m.register_forward_hook(hook(q)) for q, m in built.module.named_modules()]
    with torch.no_grad():
        built.module(*built.inputs)
    for h in handles:
        h.remove()
    return out


def values_in_graph(exported, built, names) -> dict[str, np.ndarray]:
    """The named values of the shipped graph, computed by ONNX Runtime."""
    model = onnx.load(str(exported.path))
    have = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in sorted(set(names) - have))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), built.arrays, strict=True)}
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feed), strict=True))


def assert_no_crossed_wires(exported, sites, built) -> None:
    """Every layer mapped to a value is that value, as ONNX Runtime computes it."""
    truth = outputs_by_layer(built)
    mapped_values = {name: s.value for name, s in sites.items() if s.kind == "value"}
    got = values_in_graph(exported, built, mapped_values.values())
    for name, value in mapped_values.items():
        assert got[value].shape == truth[name].shape, (name, value)
        assert np.allclose(got[value], truth[name], rtol=1e-4, atol=1e-5), (name, value)


@pytest.fixture(scope="module")
def cnn():
    return mapped("examples.zoo:tiny_cnn", (2, 3, 16, 16))


def test_each_call_of_a_module_gets_its_own_value(cnn):
    _, _, a = cnn
    assert a["block1.relu"].kind == "value" and a["block1.relu#2"].kind == "value"
    assert a["block1.relu"].value != a["block1.relu#2"].value


def test_conv_folded_into_batchnorm_is_reported_folded_not_matched(cnn):
    exported, _, a = cnn
    assert a["block1.conv1"].kind == "folded"
    # The fused Conv node produces the BatchNorm's value, which stays matched to the BatchNorm.
    assert a["block1.bn1"].kind == "value" and a["block1.bn1"].value in exported.available


def test_containers_and_root_are_layers(cnn):
    _, records, a = cnn
    names = [r.name for r in records]
    assert names.index("block1.conv1") < names.index("block1") < names.index("(model)")
    assert a["block1"].kind == "value" and a["(model)"] == OnnxSite("output", output=0)


def test_identity_module_takes_the_value_it_passes_on(cnn):
    # Dropout in eval has no node of its own: its output is the value it was given (flatten's).
    _, _, a = cnn
    assert a["drop"].kind == "value"


def test_tuple_outputs_are_named_per_element():
    _, records, a = mapped("examples.zoo:tiny_transformer", (2, 8, 16))
    assert a["blocks.1.attn[0]"].kind == "value"
    # The attention weights are unused downstream: the export drops them, and the gate says so
    # rather than matching them to another value.
    assert a["blocks.1.attn[1]"].kind in ("folded", "absent")
    assert a["blocks.0.attn.merge"].kind == "value"


def test_torchscript_exporter_maps_by_node_names():
    exported, _, a = mapped("examples.zoo:tiny_cnn", (2, 3, 16, 16), exporter="torchscript")
    assert exported.exporter == "torchscript"
    assert a["block1.relu"].kind == "value" and a["block1.relu#2"].kind == "value"
    assert a["block1.relu"].value != a["block1.relu#2"].value
    assert a["fc"].kind == "value"


def test_torchscript_names_under_an_iterated_module_list_and_symbolic_shapes_cross_no_wires():
    """Blocks in a ModuleList that is iterated (no scope of its own in the node names) are found; a
    block returning the list it was given has one value of its own, which its passed-through
    elements must not take although symbolic shapes allow it: they take their producers' values."""
    exported, _, sites, built = mapped("tests.integration.mapping_models:pyramid", (1, 3, 16, 16), "torchscript",
                                       with_built=True, dynamic={"x": {2: "h", 3: "w"}})
    assert exported.exporter == "torchscript"
    assert any(isinstance(d, str) for d in exported.shapes[sites["inner.0"].value])  # symbolic in the graph
    assert all(sites[n].kind == "value" for n in ("stem.0", "stem.1", "inner.0", "inner.1"))
    assert sites["extra[0][0]"].value == sites["inner.0"].value and sites["extra[0][1]"].value == sites["inner.1"].value
    assert sites["extra[0][2]"].kind == "value" and sites["extra[0][2]"].value not in (sites["inner.0"].value,
                                                                                     sites["inner.1"].value)
    assert_no_crossed_wires(exported, sites, built)


def test_scope_metadata_parser_needs_no_eval():
    assert eval_list("['', 'layer1', 'layer1.0']") == ["", "layer1", "layer1.0"]
    with pytest.raises(ValueError):
        eval_list("__import__('os')")


def test_the_example_models_values_are_the_ones_mapped():
    for factory, shape in (("examples.zoo:tiny_cnn", (2, 3, 16, 16)), ("examples.zoo:tiny_transformer", (2, 8, 16))):
        exported, _, sites, built = mapped(factory, shape, with_built=True)
        assert_no_crossed_wires(exported, sites, built)


def test_a_wrapper_around_a_model_returning_a_dict_is_mapped_by_what_computes_each_value():
    # Inner returns {"late", "early", "pair": (...)}: four elements of one shape, out of production
    # order, "early" also used inside the call; called twice, with keywords in either order.
    exported, _, sites, built = mapped("tests.integration.mapping_models:dict_wrapper", (3, 8), with_built=True)
    for call in ("inner", "inner#2"):
        for element in ("[late]", "[early]", "[pair][0]", "[pair][1]"):
            assert sites[call + element].kind in ("value", "absent"), (call, element, sites[call + element])
    assert all(sites[n].kind == "value" for n in ("inner[late]", "inner[early]", "inner[pair][1]", "inner#2[early]"))
    # What the caller ignores is not computed in the graph: absent, and why, rather than a neighbour.
    assert sites["inner#2[late]"].kind == "absent" and "not computed" in sites["inner#2[late]"].reason
    assert_no_crossed_wires(exported, sites, built)


@pytest.mark.parametrize("factory, exporter", [("dict_wrapper", "torchscript"), ("dict_wrapper_swapped", "dynamo")])
def test_without_recorded_outputs_a_shape_shared_by_outputs_is_absent_not_guessed(factory, exporter):
    exported, _, sites, built = mapped(f"tests.integration.mapping_models:{factory}", (3, 8), exporter,
                                       with_built=True)
    assert not any(module == "inner" for module, _, _ in exported.outputs)
    for element in ("[late]", "[early]", "[pair][0]", "[pair][1]"):
        assert sites["inner" + element].kind == "absent"
        assert "did not record which computes it" in sites["inner" + element].reason
    assert_no_crossed_wires(exported, sites, built)


@pytest.fixture(scope="module")
def clip():
    return mapped("tests.integration.mapping_models:clip_eager", inputs="tests.integration.mapping_models:clip_inputs",
                  with_built=True)


def test_a_clip_model_called_with_keywords_gets_each_output_from_what_computes_it(clip):
    exported, _, sites, built = clip
    inner = ["m[logits_per_image]", "m[logits_per_text]", "m[text_embeds]", "m[image_embeds]",
             "m[text_model_output][pooler_output]", "m[vision_model_output][pooler_output]"]
    assert all(sites[n].kind == "value" for n in inner), {n: sites[n] for n in inner}
    assert len({sites[n].value for n in inner}) == len(inner)
    assert_no_crossed_wires(exported, sites, built)


def test_attention_weights_are_matched_to_the_softmax_that_computes_them(clip):
    exported, _, sites, _ = clip
    for layer in ("m.text_model.encoder.layers.0.self_attn[1]", "m.vision_model.encoder.layers.1.self_attn[1]"):
        site = sites[layer]
        # The optimizer rewrites the softmax (its value gets another name): folded, never a shape match.
        assert site.kind in ("value", "folded") and site.value.startswith("softmax"), site


def test_elements_of_a_multi_output_op_are_each_their_own_value():
    exported, _, sites, built = mapped("tests.integration.mapping_models:recurrent", (2, 5, 8), with_built=True)
    elements = ["lstm[0]", "lstm[1][0]", "lstm[1][1]"]
    assert all(sites[n].kind == "value" for n in elements), {n: sites[n] for n in elements}
    assert len({sites[n].value for n in elements}) == 3
    assert_no_crossed_wires(exported, sites, built)


def _spec(factory: str, shape: tuple | None = None, inputs: str | None = None) -> ModelSpec:
    return ModelSpec(name="m", factory=factory, inputs=inputs or (InputSpec("x", shape),), where="models[0]")


@pytest.mark.parametrize("factory, shape, inputs", [
    ("examples.zoo:tiny_cnn", (2, 3, 16, 16), None),
    ("tests.integration.mapping_models:dict_wrapper", (3, 8), None),
    ("tests.integration.mapping_models:dict_wrapper_swapped", (3, 8), None),
    ("tests.integration.mapping_models:recurrent", (2, 5, 8), None),
    ("tests.integration.mapping_models:clip_eager", None, "tests.integration.mapping_models:clip_inputs"),
])
def test_the_probe_finds_the_modules_the_export_s_own_forward_would(factory, shape, inputs):
    from torch.onnx._internal.exporter._flags import set_onnx_exporting_flag

    from gate.export import signatures
    from gate.model.trace import probe

    built = build(_spec(factory, shape, inputs), ROOT)
    found = probe(built).recordable
    assert found == set_onnx_exporting_flag(signatures.recordable)(built.module, built.inputs)
    assert found and ("inner" in found) == factory.endswith(":dict_wrapper")  # swapped keywords: refused
    given, own = export(built, found), export(built)
    assert given.outputs == own.outputs and given.calls == own.calls


def _graph(exported) -> tuple[list[str], bytes]:
    proto = onnx.load(str(exported.path), load_external_data=False)
    return [o.name for o in proto.graph.output], proto.graph.SerializeToString()


def test_a_call_that_adds_to_a_cache_it_was_given_is_not_recorded_and_the_graph_returns_the_cache():
    """A recorded call is handed a copy of the cache: what it adds would never reach the model's outputs."""
    built = build(_spec("tests.integration.mapping_models:cached", (3, 8)), ROOT)
    signed, plain = export(built), export(built, ())
    assert len(_graph(signed)[0]) == 3 and _graph(signed) == _graph(plain) and signed.outputs
    assert not {"layers.0", "layers.1"} & set(signatures.recordable(built.module, built.inputs))


@pytest.mark.parametrize("factory, shape", [("dict_wrapper", (3, 8)), ("recurrent", (2, 5, 8))])
def test_calls_returning_tuples_and_dicts_are_recorded_and_ship_the_plain_export_s_graph(factory, shape):
    built = build(_spec(f"tests.integration.mapping_models:{factory}", shape), ROOT)
    signed, plain = export(built), export(built, ())
    assert signed.outputs and not plain.outputs and _graph(signed) == _graph(plain)


def test_a_module_that_changes_under_the_export_s_flag_falls_back_to_the_plain_export():
    from gate.model.trace import probe

    built = build(_spec("tests.integration.mapping_models:flag_switch", (3, 8)), ROOT)
    found = probe(built).recordable
    assert "switch" in found  # without the flag it returns a tensor
    exported = export(built, found)
    assert not exported.outputs  # the trace with signatures failed on it: no recorded outputs, shapes only
    records = torch_hooks.run(built.module, built.inputs)
    sites = assign(records, exported.calls, exported.shapes, exported.available, outputs=exported.outputs)
    assert sites["head"].kind == "value"
    assert_no_crossed_wires(exported, sites, built)


def test_same_shaped_lstm_states_offer_their_values_and_torch_s_numbers_pick_each():
    """TorchScript records no call's outputs, and an LSTM's h and c share a shape: the map offers both
    values to each; the value ONNX Runtime computes within float32 rounding of torch's is each one's own."""
    exported, records, sites, built = mapped("tests.integration.mapping_models:lstm_stack", (2, 5, 8),
                                             "torchscript", with_built=True)
    states = ["first[1][0]", "first[1][1]", "second[1][0]", "second[1][1]"]
    for h, c in (states[:2], states[2:]):
        assert sites[h].kind == sites[c].kind == "absent" and sites[h].candidates == sites[c].candidates
        assert len(sites[h].candidates) == 2 and "did not record which computes it" in sites[h].reason
    got = values_in_graph(exported, built, {v for s in sites.values() for v in s.candidates})
    captured = {v: fingerprint(a) for v, a in got.items()}
    torch_fp, truth = {r.name: r.fp for r in records}, outputs_by_layer(built)
    chosen = {layer: pick({v: captured[v] for v in sites[layer].candidates}, torch_fp[layer], "float32").value
              for layer in states}
    assert len(set(chosen.values())) == 4
    for layer, value in chosen.items():
        assert np.allclose(got[value], truth[layer], rtol=1e-4, atol=1e-6), layer
    h, c = sites["first[1][0]"].candidates
    off = pick({h: fingerprint(got[h] * 1.001), c: captured[c]}, torch_fp["first[1][0]"], "float32")
    assert off.value is None and off.within == 0
    assert off.reason((1, 2, 8)).startswith(
        "2 candidate values of shape [1, 2, 8]; none within float32 noise (1e-05)")


def test_a_candidate_is_taken_within_rounding_of_torch_at_its_limit_and_never_one_of_several():
    torch_out = fp()
    for precision, noise in (("float32", 1e-5), ("float16", 1e-3), ("int8", 1e-5)):
        inside, past = fp(noise * (1 - 1e-6), axis=2), fp(noise * (1 + 1e-6), axis=2)
        far = fp(0.5, axis=3)
        assert pick({"a": inside, "b": far}, torch_out, precision).value == "a", precision
        assert pick({"a": past, "b": far}, torch_out, precision).value is None, precision
    twins = pick({"a": fp(1e-7, axis=2), "b": fp(1e-7, axis=3), "c": fp(0.5, axis=4)}, torch_out, "float32")
    assert (twins.value, twins.captured, twins.within) == (None, 3, 2)
    said = "; 2 within float32 noise (1e-05) of torch's output: they hold the same numbers"
    assert said in twins.reason((2, 4))
    other = pick({"a": fp(0.0, shape=(4, 2))}, torch_out, "float32")  # a symbolic shape let it in
    assert (other.value, other.shaped) == (None, 0)
    assert other.reason((2, 4)) == "no value the call exposes has shape [2, 4] when run"
    assert pick({}, torch_out, "float32").reason((2, 4)) == \
        "none of the values its shape allows is in the graph that ran"

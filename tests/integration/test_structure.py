"""A weight-only change binds the new weights into the stored structure (gate/export/structure.py): on
public architectures and on buffers the exporter names as it names an operation's output, the graph
that gives is the graph a fresh export of the changed model gives (the same digest: initializers,
folded constants, nodes), with the same layer map; a structure whose
weights do not fit the model is refused, never bound."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from gate.config import load_config
from gate.export import graph
from gate.export.exporter import bound, export
from gate.export.layermap import FOLDED, assign
from gate.export.structure import Structure, Unbindable, with_availability
from gate.model.build import build

HERE = Path(__file__).parent
IMAGE = 'inputs = [{ name = "x", shape = [1, 3, 32, 32] }]'
TOKENS = 'inputs = [{ name = "input_ids", shape = [1, 8], dtype = "int64", low = 0, high = 100 }]'
ARCHS = {"resnet18": IMAGE, "mobilenet": IMAGE, "vit": IMAGE, "bert": TOKENS, "gpt2": TOKENS, "llama": TOKENS,
         "normalized": IMAGE, "normalized_renamed": IMAGE}


def built_model(tmp: Path, arch: str):
    shutil.copy(HERE / "structure_models.py", tmp / "structure_models.py")
    path = tmp / "parity-gate.toml"
    path.write_text(f'[[models]]\nname = "{arch}"\nfactory = "structure_models:{arch}"\n{ARCHS[arch]}\n')
    cfg = load_config(path)
    return build(cfg.models[0], cfg.root)


def fresh(built):
    with built.fresh():
        return export(built)


def structure_of(built, exported) -> Structure:
    from gate.model import trace

    records = trace.probe(built).records
    before = assign(records, exported.calls, exported.shapes, exported.unoptimized, exported.ambiguous,
                    exported.outputs)
    proto, weights, renamed = exported.structure
    return Structure(proto, weights, before, exported.opset, renamed)


def change_weights(module: torch.nn.Module) -> None:
    """Every third parameter and every floating buffer, persistent (BatchNorm statistics) or not (Llama's
    rotary frequencies), moved: what the weights part of the key digests."""
    with torch.no_grad():
        for p in list(module.parameters())[::3]:
            p.mul_(1.01).add_(1e-3)
        for b in module.buffers():
            if b.is_floating_point():
                b.mul_(1.1).add_(0.01)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_bound_weights_give_the_graph_a_fresh_export_gives(tmp_path, arch):
    built = built_model(tmp_path, arch)
    stored = structure_of(built, fresh(built))
    assert stored.weights  # the structure leaves the weights out
    change_weights(built.module)
    built.pristine = type(built.pristine)(built.module, arch)  # the changed model is the one built
    rebound, again = bound(built, stored), fresh(built)
    assert graph.file_digest(rebound.path) == graph.file_digest(again.path)
    assert with_availability(stored.sites, rebound.available, FOLDED) == \
        with_availability(structure_of(built, again).sites, again.available, FOLDED)


def test_a_structure_whose_weights_do_not_fit_is_refused(tmp_path):
    built = built_model(tmp_path, "resnet18")
    stored = structure_of(built, fresh(built))
    wrong = Structure(stored.proto, {**stored.weights, "fc.weight": "no.such.tensor"}, stored.sites,
                      stored.opset, stored.renamed)
    with pytest.raises(Unbindable, match="no tensor `no.such.tensor`"):
        bound(built, wrong)
    with torch.no_grad():
        built.module.fc.weight = torch.nn.Parameter(torch.zeros(3, 512))  # another shape
    with pytest.raises(Unbindable, match="fc.weight"):
        bound(built, stored)


def test_a_weight_holding_nan_is_left_out_like_any_other(tmp_path):
    """``torch.equal`` calls a tensor holding a NaN unequal to itself: the structure must still leave
    that weight out, or a later binding of other weights keeps the NaN (a key that does not digest
    the weights would carry them)."""
    built = built_model(tmp_path, "resnet18")
    with torch.no_grad():
        built.module.layer1[0].conv2.weight[0, 0, 0, 0] = float("nan")
    built.pristine = type(built.pristine)(built.module, "resnet18")
    stored = structure_of(built, fresh(built))
    assert set(stored.weights) >= {"layer1.0.conv2.weight", "fc.weight"}
    with torch.no_grad():
        built.module.layer1[0].conv2.weight[0, 0, 0, 0] = 0.5
    built.pristine = type(built.pristine)(built.module, "resnet18")
    assert graph.file_digest(bound(built, stored).path) == graph.file_digest(fresh(built).path)


def _weights_held_after(tmp_path, arch: str, make) -> list[str]:
    """The parameters whose memory is still held once the model, the graph ``make(built)`` gave and
    everything else of the test are gone."""
    import gc
    import weakref

    built = built_model(tmp_path, arch)
    built.digest.result()
    storages = {name: weakref.ref(p.untyped_storage()) for name, p in built.module.named_parameters()}
    made = make(built)
    assert made.path.exists()
    del built, made
    gc.collect()
    return [name for name, ref in storages.items() if ref() is not None]


@pytest.mark.parametrize("arch", ["resnet18", "gpt2"])
def test_nothing_holds_the_model_s_weights_once_the_export_is_done(tmp_path, arch):
    # onnxscript's optimizer keeps the last graph it rewrote in a rule at module level: the graph
    # must not keep the model's tensors (``exporter._save_ir``).
    assert _weights_held_after(tmp_path, arch, fresh) == []


def test_nothing_holds_the_model_s_weights_once_a_structure_is_bound(tmp_path):
    built = built_model(tmp_path, "gpt2")
    stored = structure_of(built, fresh(built))
    del built
    assert _weights_held_after(tmp_path, "gpt2", lambda b: bound(b, stored)) == []

"""Fault-injection benchmark: does parity-gate catch real faults in real architectures, name the
layer, stay quiet on benign changes, and explain what it found?

Models are public definitions with random weights (nothing is downloaded): torchvision
resnet18, mobilenet_v3_small, efficientnet_b0, a small torchvision VisionTransformer, and
Hugging Face transformers BERT and GPT-2 with small configs (skipped, and said so, when
transformers is not installed). For each model the benchmark writes a baseline with the
unchanged factory, then runs ``gate.commands.check`` (in-process, real export, real ONNX
Runtime CPUExecutionProvider in its worker) once per injected fault and once per benign change.

Definitions
- detected: the check's verdict is ``regressed``.
- localized: the first regression names the injected layer: its qualified name ``q``, one of its
  calls (``q#k``), one of its output elements (``q[i]``), or, for a fault injected into a
  container (attention scale), the first of its submodules that it affects (``q.<child>``).
- false positive: a benign change whose verdict is not ``pass``.
- hint ok: the report's ``hints`` hold the hint the injected cause should produce (weights ->
  ``model-change`` with cause weights; code/hyperparameter -> ``model-change`` with cause code;
  transpose -> ``layout``; float16 round trip -> ``precision-loss``).

Usage:
    PYTHONPATH=. python scripts/bench_faults.py [--models resnet18,vit] [--kinds weight_1e3,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

# Models ----------------------------------------------------------------------------------

CNN_INPUT = '[{ name = "x", shape = [1, 3, 64, 64], dtype = "float32" }]'
VIT_INPUT = '[{ name = "x", shape = [1, 3, 32, 32], dtype = "float32" }]'
TOKENS_INPUT = '[{ name = "input_ids", shape = [1, 8], dtype = "int64", low = 0, high = 100 }]'


def build_resnet18() -> nn.Module:
    from torchvision.models import resnet18

    return resnet18(num_classes=10)


def build_mobilenet_v3_small() -> nn.Module:
    from torchvision.models import mobilenet_v3_small

    return mobilenet_v3_small(num_classes=10)


def build_efficientnet_b0() -> nn.Module:
    from torchvision.models import efficientnet_b0

    return efficientnet_b0(num_classes=10)


def build_vit() -> nn.Module:
    from torchvision.models import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                              dropout=0.1, attention_dropout=0.1, num_classes=10)
    # torchvision initializes the classification head to zeros: the output would be all zeros, which
    # the gate rightly refuses as degenerate. Random head weights, as a trained model would have.
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 32**-0.5)
    return model


def _hf_config(kind: str):
    import transformers

    if kind == "bert":
        cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=64, max_position_embeddings=16, hidden_dropout_prob=0.1,
                                      attention_probs_dropout_prob=0.1)
    else:
        cfg = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=16, n_inner=64,
                                      resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)
        cfg.use_cache = False
        cfg.bos_token_id = cfg.eos_token_id = 0
    cfg.return_dict = False
    cfg._attn_implementation = "eager"  # attention written out, so its scale is a visible attribute
    return cfg


def build_bert() -> nn.Module:
    import transformers

    return transformers.BertModel(_hf_config("bert"), add_pooling_layer=False)


def build_gpt2() -> nn.Module:
    import transformers

    return transformers.GPT2Model(_hf_config("gpt2"))


# Fault appliers --------------------------------------------------------------------------

def _get(model: nn.Module, path: str) -> nn.Module:
    return model.get_submodule(path)


def _swap_class(module: nn.Module, tag: str, **methods) -> None:
    """Change one module's behaviour without renaming it: a subclass of its own class."""
    module.__class__ = type(f"{tag}{type(module).__name__}", (type(module),), methods)


def scale_weight(eps: float):
    def apply(model, path):
        with torch.no_grad():
            _get(model, path).weight.mul_(1 + eps)
    return apply


def swap_activation(new):
    def apply(model, path):
        model.set_submodule(path, new())
    return apply


def set_eps(value: float, otherwise: float = 1e-5):
    """eps -> ``value`` (``otherwise`` when it already is ``value``: mobilenet_v3's BatchNorms use 1e-3)."""
    def apply(model, path):
        m = _get(model, path)
        m.eps = otherwise if m.eps == value else value
    return apply


def attention_scale(factor: float):
    def apply(model, path):
        m = _get(model, path)
        if hasattr(m, "scaling"):  # transformers eager attention
            m.scaling = m.scaling * factor
        else:  # torch.nn.MultiheadAttention: its scale is internal; scaling q is the same change
            d = m.embed_dim
            with torch.no_grad():
                m.in_proj_weight[:d].mul_(factor)
                m.in_proj_bias[:d].mul_(factor)
    return apply


def _transpose_forward(self, *args, **kwargs):
    y = super(type(self), self).forward(*args, **kwargs)
    return y.transpose(-1, -2).contiguous().reshape(y.shape)


def transpose(model, path):
    """A shape-preserving transpose of the layer's output (transpose then reshape when not square)."""
    _swap_class(_get(model, path), "Transposed", forward=_transpose_forward)


def _fp16_forward(self, *args, **kwargs):
    y = super(type(self), self).forward(*args, **kwargs)
    return y.to(torch.float16).to(y.dtype)


def fp16_roundtrip(model, path):
    _swap_class(_get(model, path), "Half", forward=_fp16_forward)


def _always_train(self, mode=True):
    self.training = True
    return self


def stuck_in_training(model, path):
    """``module.train()`` that survives ``model.eval()`` (which the gate calls after the factory, as
    every inference pipeline does): a Dropout (or BatchNorm) left in training mode."""
    m = _get(model, path)
    _swap_class(m, "Training", train=_always_train)
    m.training = True


def padding_reflect(model, path):
    _get(model, path).padding_mode = "reflect"


# Benign changes
def relu_not_inplace(model, _path):
    for name, m in list(model.named_modules()):
        if isinstance(m, nn.ReLU) and m.inplace:
            model.set_submodule(name, nn.ReLU())


class GeluFn(nn.Module):
    """The exact GELU written as a function call: same math as nn.GELU()."""

    def forward(self, x):
        return nn.functional.gelu(x)


def gelu_as_function(model, _path):
    for name, m in list(model.named_modules()):
        if isinstance(m, nn.GELU) and m.approximate == "none":
            model.set_submodule(name, GeluFn())


def dropout_to_identity(model, _path):
    for name, m in list(model.named_modules()):
        if isinstance(m, nn.Dropout):
            model.set_submodule(name, nn.Identity())


def nothing(model, _path):
    return None


# What each model gets: kind -> (layer, applier, expected hint)
W3, W6 = scale_weight(1e-3), scale_weight(1e-6)
EPS = set_eps(1e-3)
HINT_W = ("model-change", "weights")
HINT_C = ("model-change", "code")
HINT_L = ("layout", None)
HINT_P = ("precision-loss", None)

MODELS = {
    "resnet18": dict(build=build_resnet18, inputs=CNN_INPUT, faults={
        "weight_1e3": ("layer2.0.conv1", W3, HINT_W),
        "weight_1e6": ("layer3.1.conv2", W6, HINT_W),
        "act_relu_to_gelu": ("layer2.0.relu", swap_activation(lambda: nn.GELU()), HINT_C),
        "norm_eps": ("layer1.1.bn2", EPS, HINT_C),
        "transpose": ("layer2.1.bn1", transpose, HINT_L),
        "padding_reflect": ("layer3.0.conv2", padding_reflect, HINT_C),
        "fp16_roundtrip": ("layer3.0.conv1", fp16_roundtrip, HINT_P),
        # resnet18 has no Dropout: the same bug class on a BatchNorm (batch statistics at inference)
        "bn_left_training": ("layer1.0.bn1", stuck_in_training, HINT_C),
    }, benign={"rerun": nothing, "threads_1": nothing, "relu_not_inplace": relu_not_inplace}),
    "mobilenet_v3_small": dict(build=build_mobilenet_v3_small, inputs=CNN_INPUT, faults={
        "weight_1e3": ("features.4.block.0.0", W3, HINT_W),
        "weight_1e6": ("features.6.block.3.0", W6, HINT_W),
        "act_hardswish_to_relu": ("features.4.block.0.2", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": ("features.2.block.1.1", EPS, HINT_C),
        "transpose": ("features.3.block.0.1", transpose, HINT_L),
        "padding_reflect": ("features.5.block.1.0", padding_reflect, HINT_C),
        "fp16_roundtrip": ("features.7.block.0.0", fp16_roundtrip, HINT_P),
        "dropout_left_active": ("classifier.2", stuck_in_training, HINT_C),
    }, benign={"rerun": nothing, "threads_1": nothing, "relu_not_inplace": relu_not_inplace}),
    "efficientnet_b0": dict(build=build_efficientnet_b0, inputs=CNN_INPUT, faults={
        "weight_1e3": ("features.3.0.block.0.0", W3, HINT_W),
        "weight_1e6": ("features.5.1.block.3.0", W6, HINT_W),
        "act_silu_to_relu": ("features.2.0.block.0.2", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": ("features.4.0.block.1.1", EPS, HINT_C),
        "transpose": ("features.3.1.block.0.1", transpose, HINT_L),
        "padding_reflect": ("features.2.0.block.1.0", padding_reflect, HINT_C),
        "fp16_roundtrip": ("features.6.0.block.0.0", fp16_roundtrip, HINT_P),
        "dropout_left_active": ("classifier.0", stuck_in_training, HINT_C),
    }, benign={"rerun": nothing, "threads_1": nothing, "relu_not_inplace": relu_not_inplace}),
    "vit": dict(build=build_vit, inputs=VIT_INPUT, faults={
        "weight_1e3": ("encoder.layers.encoder_layer_0.mlp.0", W3, HINT_W),
        "weight_1e6": ("encoder.layers.encoder_layer_1.mlp.3", W6, HINT_W),
        "act_gelu_to_relu": ("encoder.layers.encoder_layer_0.mlp.1", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": ("encoder.layers.encoder_layer_1.ln_1", EPS, HINT_C),
        "attention_scale": ("encoder.layers.encoder_layer_0.self_attention", attention_scale(1.1), HINT_W),
        "transpose": ("encoder.layers.encoder_layer_0.mlp.0", transpose, HINT_L),
        "fp16_roundtrip": ("encoder.layers.encoder_layer_1.mlp.0", fp16_roundtrip, HINT_P),
        "dropout_left_active": ("encoder.layers.encoder_layer_0.dropout", stuck_in_training, HINT_C),
    }, benign={"rerun": nothing, "threads_1": nothing, "gelu_as_function": gelu_as_function}),
    "bert": dict(build=build_bert, inputs=TOKENS_INPUT, needs="transformers", faults={
        "weight_1e3": ("encoder.layer.0.intermediate.dense", W3, HINT_W),
        "weight_1e6": ("encoder.layer.1.output.dense", W6, HINT_W),
        "act_gelu_to_relu": ("encoder.layer.0.intermediate.intermediate_act_fn", swap_activation(lambda: nn.ReLU()),
                             HINT_C),
        "norm_eps": ("encoder.layer.1.attention.output.LayerNorm", EPS, HINT_C),
        "attention_scale": ("encoder.layer.0.attention.self", attention_scale(1.1), HINT_C),
        "transpose": ("encoder.layer.0.intermediate.dense", transpose, HINT_L),
        "fp16_roundtrip": ("encoder.layer.1.intermediate.dense", fp16_roundtrip, HINT_P),
        "dropout_left_active": ("embeddings.dropout", stuck_in_training, HINT_C),
    }, benign={"rerun": nothing, "threads_1": nothing, "dropout_to_identity": dropout_to_identity}),
    "gpt2": dict(build=build_gpt2, inputs=TOKENS_INPUT, needs="transformers", faults={
        "weight_1e3": ("h.0.mlp.c_fc", W3, HINT_W),
        "weight_1e6": ("h.1.attn.c_proj", W6, HINT_W),
        "act_gelu_new_to_gelu": ("h.0.mlp.act", swap_activation(lambda: nn.GELU()), HINT_C),
        "norm_eps": ("h.1.ln_2", EPS, HINT_C),
        "attention_scale": ("h.0.attn", attention_scale(1.1), HINT_C),
        "transpose": ("h.0.mlp.c_fc", transpose, HINT_L),
        "fp16_roundtrip": ("h.1.mlp.c_fc", fp16_roundtrip, HINT_P),
        "dropout_left_active": ("drop", stuck_in_training, HINT_C),
    }, benign={"rerun": nothing, "threads_1": nothing, "dropout_to_identity": dropout_to_identity}),
}


def __getattr__(name: str):
    """Factories for the gate's config: ``benchfx:<model>__<fault or benign kind>``."""
    if "__" not in name or name.startswith("__"):
        raise AttributeError(name)
    model_name, kind = name.split("__", 1)
    spec = MODELS[model_name]

    def factory() -> nn.Module:
        model = spec["build"]()
        if kind == "base":
            return model
        if kind in spec["faults"]:
            path, apply, _ = spec["faults"][kind]
            apply(model, path)
        else:
            spec["benign"][kind](model, None)
        return model

    factory.__name__ = name
    return factory


# Benchmark -------------------------------------------------------------------------------

def named(layer: str | None, injected: str) -> bool:
    if not layer:
        return False
    return layer == injected or layer.startswith((injected + "#", injected + "[", injected + "."))


def expected_hint(report_model: dict, expected: tuple[str, str | None]) -> dict | None:
    kind, cause = expected
    for h in report_model.get("hints", []):
        if h["kind"] == kind and (cause is None or h["evidence"].get("cause") == cause):
            return h
    return None


def write_config(folder: Path, model: str, factory: str, inputs: str) -> Path:
    path = folder / "parity-gate.toml"
    path.write_text(f'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
                    f'[[models]]\nname = "{model.replace("_", "-")}"\nfactory = "{factory}"\ninputs = {inputs}\n')
    return path


def run_check(folder: Path, model: str, factory: str, inputs: str, threads: str | None = None) -> tuple[dict, float]:
    from gate import commands
    from gate.config import load_config

    cfg = load_config(write_config(folder, model, factory, inputs))
    old = os.environ.get("PARITY_GATE_THREADS")
    if threads:
        os.environ["PARITY_GATE_THREADS"] = threads
    t0 = time.perf_counter()
    try:
        report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    finally:
        if threads:
            if old is None:
                os.environ.pop("PARITY_GATE_THREADS", None)
            else:
                os.environ["PARITY_GATE_THREADS"] = old
            torch.set_num_threads(int(old) if old else _default_threads)
    return report, time.perf_counter() - t0


_default_threads = torch.get_num_threads()


def bench_model(folder: Path, model: str, kinds: list[str] | None, log) -> dict:
    from gate import commands
    from gate.config import load_config

    spec = MODELS[model]
    cfg = load_config(write_config(folder, model, f"benchfx:{model}__base", spec["inputs"]))
    t0 = time.perf_counter()
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    base_s = time.perf_counter() - t0
    rows = []
    for kind, (layer, _apply, expected) in spec["faults"].items():
        if kinds and kind not in kinds:
            continue
        try:
            report, secs = run_check(folder, model, f"benchfx:{model}__{kind}", spec["inputs"])
        except Exception as exc:  # noqa: BLE001 - a benchmark row, not a crash
            rows.append(dict(kind=kind, layer=layer, benign=False, error=f"{type(exc).__name__}: {exc}"))
            log(f"  {kind:24s} ERROR {exc}")
            continue
        fr = report["first_regression"] or {}
        m = report["models"][0]
        row = dict(kind=kind, layer=layer, benign=False, verdict=report["verdict"], first_layer=fr.get("layer"),
                   first_provider=fr.get("provider"), check=fr.get("check"), value=fr.get("value"),
                   detected=report["verdict"] == "regressed", localized=named(fr.get("layer"), layer),
                   hint_ok=expected_hint(m, expected) is not None,
                   hint_message=(expected_hint(m, expected) or {}).get("message"), expected_hint=expected[0] + (f"/{expected[1]}" if expected[1] else ""),
                   hints=sorted({h["kind"] for h in m.get("hints", [])}), seconds=secs)
        rows.append(row)
        log(f"  {kind:24s} {row['verdict']:9s} first={row['first_layer']} ({row['first_provider']}, {row['check']} "
            f"{_g(row['value'])}) injected={layer} localized={row['localized']} hint={row['hint_ok']} {secs:.1f}s")
    for kind, _apply in spec["benign"].items():
        if kinds and kind not in kinds:
            continue
        report, secs = run_check(folder, model, f"benchfx:{model}__{'base' if kind in ('rerun', 'threads_1') else kind}",
                                 spec["inputs"], threads="1" if kind == "threads_1" else None)
        fr = report["first_regression"] or {}
        rows.append(dict(kind=kind, benign=True, verdict=report["verdict"], first_layer=fr.get("layer"),
                         first_provider=fr.get("provider"), check=fr.get("check"), value=fr.get("value"),
                         false_positive=report["verdict"] != "pass", seconds=secs))
        log(f"  {kind:24s} {report['verdict']:9s} (benign) {fr.get('layer') or ''} {fr.get('check') or ''} "
            f"{_g(fr.get('value'))} {secs:.1f}s")
    faults = [r for r in rows if not r["benign"]]
    benign = [r for r in rows if r["benign"]]
    detected = [r for r in faults if r.get("detected")]
    summary = dict(model=model, injected=len(faults), detected=len(detected),
                   localized=sum(bool(r.get("localized")) for r in detected),
                   hints_ok=sum(bool(r.get("hint_ok")) for r in faults), benign=len(benign),
                   false_positives=sum(bool(r.get("false_positive")) for r in benign),
                   seconds_per_check=sum(r.get("seconds", 0) for r in rows) / max(len(rows), 1),
                   baseline_seconds=base_s)
    return dict(summary=summary, rows=rows)


def _g(v) -> str:
    return "" if v is None else (f"{v:.3g}" if isinstance(v, float) and math.isfinite(v) else str(v))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--kinds", default="")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import importlib.util

    import onnxruntime
    import torchvision

    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                "onnxruntime": onnxruntime.__version__}
    if importlib.util.find_spec("transformers"):
        import transformers

        versions["transformers"] = transformers.__version__
    from gate import fingerprint

    versions["backend"] = fingerprint.backend
    print("versions:", json.dumps(versions), flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="pg-bench-") as tmp:
        folder = Path(tmp)
        shutil.copy(Path(__file__), folder / "benchfx.py")
        for model in [m for m in args.models.split(",") if m]:
            needs = MODELS[model].get("needs")
            if needs and not importlib.util.find_spec(needs):
                print(f"{model}: skipped ({needs} is not installed)", flush=True)
                continue
            print(f"{model}:", flush=True)
            results.append(bench_model(folder, model, [k for k in args.kinds.split(",") if k] or None,
                                       lambda s: print(s, flush=True)))
    print()
    print("| model | recall | localization | hints | false positives | s/check |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        s = r["summary"]
        print(f"| {s['model']} | {s['detected']}/{s['injected']} | {s['localized']}/{s['detected']} | "
              f"{s['hints_ok']}/{s['injected']} | {s['false_positives']}/{s['benign']} | {s['seconds_per_check']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(dict(versions=versions, results=results), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

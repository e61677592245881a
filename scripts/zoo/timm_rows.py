"""timm rows (when timm is installed): ``timm.create_model(name, pretrained=False)``, random weights,
nothing downloaded. LeViT caches attention biases it gathers in its first eval-mode forward, in a
plain dict rather than a buffer: the state a float64 reference run must not leave behind."""

from __future__ import annotations

from torch import nn

from zoo.specs import Spec, images


def timm_model(name: str, **kwargs):
    def build() -> nn.Module:
        import timm

        return timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
    build.__name__ = name
    return build


SPECS = [
    Spec("timm-levit", "timm", timm_model("levit_128s", img_size=64), images((1, 3, 64, 64)), needs="timm"),
    Spec("timm-mobilevitv2", "timm", timm_model("mobilevitv2_050"), images((1, 3, 64, 64)), needs="timm"),
    Spec("timm-fastvit", "timm", timm_model("fastvit_t8"), images((1, 3, 64, 64)), needs="timm"),
]

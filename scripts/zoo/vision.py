"""torchvision rows: classification, segmentation, detection, video and optical flow, built by the
library's own constructors with ``weights=None`` (and ``weights_backbone=None``): random weights,
nothing downloaded. Inputs are as small as each architecture accepts."""

from __future__ import annotations

import torch
from torch import nn

from zoo.specs import Spec, images

IMG = images((1, 3, 64, 64))


def tv(name: str, **kwargs):
    """``torchvision.models.<name>(weights=None, **kwargs)``, looked up in the sub-package that has it."""
    def build() -> nn.Module:
        import torchvision.models as tvm
        from torchvision.models import detection, optical_flow, segmentation, video

        for package in (tvm, segmentation, detection, video, optical_flow):
            if hasattr(package, name):
                return getattr(package, name)(weights=None, **kwargs)
        raise AttributeError(f"torchvision has no model {name}")
    return build


def vit() -> nn.Module:
    from torchvision.models import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                              mlp_dim=64, num_classes=10)
    # torchvision initializes the head to zeros: the output would be all zeros, which the gate refuses
    # as degenerate. Random head weights, as a trained model has.
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 32**-0.5)
    return model


def maxvit() -> nn.Module:
    from torchvision.models import MaxVit

    # maxvit_t fixes partition_size=7, which needs 224x224 inputs; the same blocks at 64x64.
    return MaxVit(input_size=(64, 64), stem_channels=16, partition_size=2, block_channels=[16, 32],
                  block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10)


def mvit() -> nn.Module:
    from torchvision.models.video.mvit import MSBlockConfig, MViT

    # mvit_v2_s fixes 16x224x224 inputs; two of its blocks (pooled attention, relative positions) at 4x32x32.
    blocks = [MSBlockConfig(num_heads=1, input_channels=16, output_channels=16, kernel_q=[3, 3, 3],
                            kernel_kv=[3, 3, 3], stride_q=[1, 1, 1], stride_kv=[1, 2, 2]),
              MSBlockConfig(num_heads=2, input_channels=16, output_channels=32, kernel_q=[3, 3, 3],
                            kernel_kv=[3, 3, 3], stride_q=[1, 2, 2], stride_kv=[1, 1, 1])]
    return MViT(spatial_size=(32, 32), temporal_size=4, block_setting=blocks, residual_pool=True,
                residual_with_cls_embed=False, rel_pos_embed=True, proj_after_attn=True, num_classes=10)


class Flow(nn.Module):
    """RAFT as users call it: a few refinement iterations, the last flow estimate."""

    def __init__(self, model: nn.Module, updates: int = 3) -> None:
        super().__init__()
        self.model, self.updates = model, updates

    def forward(self, image1: torch.Tensor, image2: torch.Tensor) -> torch.Tensor:
        return self.model(image1, image2, num_flow_updates=self.updates)[-1]


def raft() -> nn.Module:
    return Flow(tv("raft_small")())


DETECTION = dict(weights_backbone=None)
SMALL_RCNN = dict(weights_backbone=None, min_size=128, max_size=128)

_CLASSIFICATION = [
    ("resnet18", tv("resnet18"), IMG), ("resnet50", tv("resnet50"), IMG),
    ("mobilenet-v2", tv("mobilenet_v2"), IMG), ("mobilenet-v3-small", tv("mobilenet_v3_small"), IMG),
    ("efficientnet-b0", tv("efficientnet_b0"), IMG), ("efficientnet-v2-s", tv("efficientnet_v2_s"), IMG),
    ("convnext-tiny", tv("convnext_tiny"), IMG), ("regnet-y-400mf", tv("regnet_y_400mf"), IMG),
    ("vit", vit, images((1, 3, 32, 32))), ("swin-t", tv("swin_t"), IMG), ("maxvit", maxvit, IMG),
    ("densenet121", tv("densenet121"), IMG), ("squeezenet1-1", tv("squeezenet1_1"), IMG),
    ("shufflenet-v2", tv("shufflenet_v2_x0_5"), IMG), ("googlenet", tv("googlenet", init_weights=True), IMG),
    ("inception-v3", tv("inception_v3", init_weights=True), images((1, 3, 96, 96))),
    ("mnasnet0-5", tv("mnasnet0_5"), IMG),
]
_SEGMENTATION = [
    ("fcn-resnet50", tv("fcn_resnet50", weights_backbone=None), IMG),
    ("deeplabv3-mobilenet", tv("deeplabv3_mobilenet_v3_large", weights_backbone=None), IMG),
    ("lraspp-mobilenet", tv("lraspp_mobilenet_v3_large", weights_backbone=None), IMG),
]
_DETECTION = [
    ("ssdlite320", tv("ssdlite320_mobilenet_v3_large", **DETECTION), images((1, 3, 160, 160))),
    ("retinanet-resnet50", tv("retinanet_resnet50_fpn", **SMALL_RCNN), images((1, 3, 128, 128))),
    ("fcos-resnet50", tv("fcos_resnet50_fpn", **SMALL_RCNN), images((1, 3, 128, 128))),
    ("fasterrcnn-mobilenet", tv("fasterrcnn_mobilenet_v3_large_320_fpn", **DETECTION), images((1, 3, 160, 160))),
    ("maskrcnn-resnet50", tv("maskrcnn_resnet50_fpn", **SMALL_RCNN), images((1, 3, 128, 128))),
    ("keypointrcnn-resnet50", tv("keypointrcnn_resnet50_fpn", **SMALL_RCNN), images((1, 3, 128, 128))),
]
CLIP = images((1, 3, 4, 32, 32))
_VIDEO = [
    ("r3d-18", tv("r3d_18"), CLIP), ("mc3-18", tv("mc3_18"), CLIP), ("r2plus1d-18", tv("r2plus1d_18"), CLIP),
    # S3D's closing pool needs 2x7x7 features: 16 frames of 224x224 is its smallest input.
    ("s3d", tv("s3d"), images((1, 3, 16, 224, 224))),
    ("mvit", mvit, CLIP),
]

SPECS = (
    [Spec(n, "torchvision/classification", b, i) for n, b, i in _CLASSIFICATION]
    + [Spec(n, "torchvision/segmentation", b, i) for n, b, i in _SEGMENTATION]
    + [Spec(n, "torchvision/detection", b, i, note="list of dicts out") for n, b, i in _DETECTION]
    + [Spec(n, "torchvision/video", b, i) for n, b, i in _VIDEO]
    # RAFT's correlation pyramid needs feature maps of 16x16 at 1/8 scale: 128x128 images at least.
    + [Spec("raft-small", "torchvision/optical-flow", raft, images((1, 3, 128, 128), (1, 3, 128, 128)),
            note="wrapper: num_flow_updates=3, last flow")]
)

"""A detector small enough to export in seconds, with a detector's post-processing: a score
threshold (``nonzero``), a top-k cut, NMS and a refinement layer applied to the boxes kept, so
its outputs and one inner layer have a shape that depends on values (``test_data_dependent``).

Most cells get a background score (a floor), and the threshold is computed in the model's own
precision (0.1 x 3): float32 rounds it onto the background score and keeps those cells, float64
does not, so the outputs hold more boxes in float32 than in float64, as a score threshold that
meets scores at its margin does. The cells the head is confident about are the same on every side.
"""

from __future__ import annotations

import torch
import torchvision
from torch import nn

CLASSES, TOP, NMS, FLOOR = 3, 48, 0.5, 0.3


class TinyDetector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.box_head = nn.Conv2d(16, 4, 1)
        self.cls_head = nn.Conv2d(16, CLASSES, 1)
        self.refine = nn.Linear(4, 4)  # applied to the boxes kept: an inner layer of data-dependent shape
        with torch.no_grad():
            # A few confident cells (about one in twenty), scores far from the threshold and the floor.
            self.cls_head.weight.mul_(300.0)
            self.cls_head.bias.fill_(-35.0)
            self.refine.weight.copy_(torch.eye(4) + 0.01 * self.refine.weight)
            self.refine.bias.mul_(0.1)

    def forward(self, x: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        features = self.backbone(x)
        deltas, logits = self.box_head(features), self.cls_head(features)
        n, _, h, w = logits.shape
        ys, xs = torch.meshgrid(torch.arange(h, dtype=x.dtype), torch.arange(w, dtype=x.dtype), indexing="ij")
        step = x.shape[-1] / w
        centers = torch.stack([xs, ys], -1).reshape(-1, 2) * step + step / 2
        out = []
        for i in range(n):
            d = deltas[i].flatten(1).T  # [cells, 4]
            mid, size = centers + d[:, :2] * step, step * 2 * torch.exp(d[:, 2:].clamp(max=2))
            boxes = torch.cat([mid - size / 2, mid + size / 2], 1).clamp(0, x.shape[-1])
            scores, labels = torch.sigmoid(logits[i].flatten(1).T).max(1)
            scores = scores.clamp(min=FLOOR)  # the background: every such cell ties with the others
            keep = scores >= scores.new_tensor(0.1) * 3  # float32: 0.3 exactly, the floor; float64: above it
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            scores, top = scores.topk(min(TOP, scores.shape[0]))
            boxes, labels = boxes[top], labels[top]
            kept = torchvision.ops.batched_nms(boxes, scores, labels, NMS)
            out.append({"boxes": self.refine(boxes[kept]), "scores": scores[kept], "labels": labels[kept]})
        return out


def detector() -> nn.Module:
    return TinyDetector()


def ssdlite() -> nn.Module:
    """torchvision's SSDlite as its library builds it, random weights, nothing downloaded."""
    return torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                      num_classes=10)


def detector_box_head_fault() -> nn.Module:
    """The box head's weights scaled by 1.001: a change of the model, inside its head."""
    m = TinyDetector()
    with torch.no_grad():
        m.box_head.weight.mul_(1.001)
    return m


def narrow_top_k(model):
    """A fault of what ships, inside the post-processing: the graph's top-k cut keeps 20 boxes, not 48."""
    import numpy as np
    from onnx import numpy_helper

    top = next(n for n in model.graph.node if n.op_type == "TopK")
    k = next(n for n in model.graph.node if n.op_type == "Constant" and n.output[0] == top.input[1])
    k.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array([20], dtype=np.int64)))
    return model

"""A zoo row's fault in the shipped graph, through a ``transform``: one weight of a deep module rounded
as float16 would store it. The PyTorch model is the baseline's, so only the execution provider can see
it. The weight is chosen, and its module found, by value (``faultbench.graph_truth.deep_weight``: a weight
matrix about 60% of the way through the graph, in the order nodes first use them, that equals exactly one
module's tensor or its transpose, and that float16 cannot store exactly), never from the exporter's
metadata the gate reads. The choice is
written to the JSON file ``ZOO_GRAPH_TRUTH`` names, for the row to score the check against."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import torch
from faultbench.graph_truth import deep_weight
from onnx import numpy_helper

from zoo import specs
from zoo.row import TRUTH_ENV

SEED = 0  # the gate's default seed: the factory builds the weights the gate built


def rounded(proto: onnx.ModelProto, name: str) -> tuple[onnx.ModelProto, float]:
    """``proto`` with initializer ``name`` rounded to float16 and back; the relative L2 change it made."""
    for init in proto.graph.initializer:
        if init.name == name:
            value = numpy_helper.to_array(init)
            half = value.astype(np.float16).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(half, init.name))
            return proto, float(np.linalg.norm(half - value) / (np.linalg.norm(value) or 1.0))
    raise ValueError(f"no initializer `{name}`")


def rounding_moves(value: np.ndarray) -> bool:
    """A weight matrix (not a bias or a norm's scale) that float16 cannot store exactly: rounding it is a
    fault (a LayerNorm's weight of ones, or a bias of 1e-6 as ViT initializes them, would change nothing
    anyone can measure)."""
    return value.ndim >= 2 and not np.array_equal(value.astype(np.float16).astype(np.float32), value)


def graph_fault_for(name: str):
    def transform(proto: onnx.ModelProto) -> onnx.ModelProto:
        torch.manual_seed(SEED)
        model = specs()[name].build().eval()
        initializer, module = deep_weight(proto, model, keep=rounding_moves)
        out, change = rounded(proto, initializer)
        path = os.environ.get(TRUTH_ENV)
        if path:
            Path(path).write_text(json.dumps({"initializer": initializer, "module": module, "change": change}))
        return out
    transform.__name__ = f"graph_fault_{name}"
    return transform

"""Transforms for the stage tests, copied into each test's project. A module is imported once per
process, from the first project that had it: what varies comes from the environment, never from
this file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from onnx import numpy_helper


def identity(proto):
    return proto


def scaled(proto):
    """``fc.weight`` scaled as a deployment setting says: the factor in the JSON file that
    ``REUSE_TEST_DEPLOY`` names (``{"fc": 1.0}``: a setting kept in a data file), times
    ``REUSE_TEST_SCALE`` where set (an environment variable it reads)."""
    factor = 1.0
    deploy = os.environ.get("REUSE_TEST_DEPLOY")
    if deploy:
        factor = json.loads(Path(deploy).read_text())["fc"]
    factor *= float(os.environ.get("REUSE_TEST_SCALE", "1"))
    for init in proto.graph.initializer:
        if init.name == "fc.weight":
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(factor), init.name))
    return proto

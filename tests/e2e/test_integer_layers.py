"""Layers of integers and bools (ids, hashes, masks) carry no rounding: their float64 reference may not
move at all, however large the values (a relative limit hides an id off by one at 7e12). A rewrite that
computes the same values passes. Real exports, real ONNX Runtime; models: tests/e2e/integer_models.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import recorded as recorded_projects

HERE = Path(__file__).parent
FACTORIES = {"ids": "ids", "mask": "mask"}


def _config(tmp: Path, model: str, factory: str) -> Path:
    shutil.copy(HERE / "integer_models.py", tmp / "integer_models.py")
    path = tmp / "parity-gate.toml"
    path.write_text('providers = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\n'
                    f'name = "{model}"\nfactory = "integer_models:{factory}"\n'
                    'inputs = [{ name = "x", shape = [4, 8], dtype = "float32" }]\n')
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return recorded_projects.record(tmp_path_factory.mktemp("integers"), _config, FACTORIES.items())


def check(tmp: Path, model: str, factory: str) -> dict:
    return recorded_projects.check(tmp, _config, model, factory)


@pytest.mark.parametrize("model, factory, layer", [("ids", "ids_off_by_one", "ids"),
                                                   ("mask", "mask_flipped", "(model)")])
def test_one_element_of_an_integer_or_bool_layer_changed_fails_where_it_changed(recorded, model, factory,
                                                                                layer):
    report = check(recorded, model, factory)
    first = report["first_regression"]
    assert report["verdict"] == "regressed", report
    assert (first["layer"], first["check"], first["threshold"]) == (layer, "reference-drift", 0.0), first
    assert "integers, which no rounding moves" in first["message"], first["message"]


def test_integer_layers_computed_the_same_way_again_pass(recorded):
    report = check(recorded, "ids", "ids_rewritten")
    assert report["verdict"] == "pass", report["first_regression"]
    rows = {r["layer"]: r for r in report["models"][0]["providers"][0]["layers"]}
    assert (rows["ids"]["status"], rows["ids"]["value"]) == ("pass", 0.0)
    assert rows["enc"]["threshold"] == 1e-9  # a float layer keeps its limit

"""gate.scaffold: the inputs init reads, the config text it writes, the requirements it finds."""

from __future__ import annotations

import pytest

from gate.errors import ConfigError
from gate.scaffold.config_text import Input, model_name, parse_input, replace_section, section
from gate.scaffold.deps import model_requirements, release


@pytest.mark.parametrize(("text", "parsed"), [
    ("x=1x3x224x224", Input("x", (1, 3, 224, 224))),
    ("1,3,32,32", Input("x", (1, 3, 32, 32))),
    ("ids=1x16:int64", Input("ids", (1, 16), "int64")),
    (" mask = 1 * 16 : bool ", Input("mask", (1, 16), "bool")),
])
def test_input_shapes_are_read_in_the_forms_people_type(text, parsed):
    assert parse_input(text) == parsed


def test_unnamed_inputs_after_the_first_are_numbered():
    assert parse_input("1x8", index=2).name == "x2"


@pytest.mark.parametrize(("text", "message"), [
    ("x=1xq", "input `x=1xq`: expected NAME=DIMS[:DTYPE]"),
    ("x=1x8:float128", "dtype `float128` is not one of"),
])
def test_bad_inputs_name_themselves(text, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        parse_input(text)


def test_model_names_come_from_the_factory():
    assert model_name("models.vision:ResNet18") == "resnet18"
    assert model_name("m:build_model_v2") == "build_model_v2"
    assert model_name("m:__") == "model"


def test_the_section_is_refused_when_check_would_refuse_it():
    with pytest.raises(ConfigError, match="factory `not a factory`"):
        section("m", "not a factory", [Input("x", (1,))])
    with pytest.raises(ConfigError, match="model name `Bad Name`"):
        section("Bad Name", "m:f", [Input("x", (1,))])
    with pytest.raises(ConfigError, match="at least one input"):
        section("m", "m:f", [])


def test_replacing_the_section_keeps_every_other_table():
    text = ('[project]\nname = "x"\n\n[tool.parity-gate]\nproviders = []\n\n[[tool.parity-gate.models]]\n'
            'name = "a"\n\n[tool.ruff]\nline-length = 9\n')
    out = replace_section(text, "[tool.parity-gate]\nnew = 1\n")
    assert out == '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 9\n\n[tool.parity-gate]\nnew = 1\n'


def test_requirements_are_the_packages_the_factory_code_imports(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("from .nets import build\n")
    (tmp_path / "app" / "nets.py").write_text("import os\nimport torch\nfrom . import util\nimport yaml\n")
    (tmp_path / "app" / "util.py").write_text("import hypothesis\n")
    assert model_requirements("app:build", tmp_path) == ["hypothesis", "PyYAML"]
    assert model_requirements("missing.module:f", tmp_path) == []


def test_a_local_build_label_pins_the_release():
    assert release("2.14.1+cpu") == "2.14.1" and release("1.32.0") == "1.32.0"


def test_adding_requirements_leaves_a_requirements_file_and_known_packages_alone():
    from gate.scaffold.add import merge_pip_args
    from gate.scaffold.workflows import Flow, workflows

    for kind in ("single", "gpu", "fork"):
        for text in workflows(Flow(kind, pip_args="-r requirements.txt")).values():
            assert merge_pip_args(text, ["timm"]) == text
        for text in workflows(Flow(kind, pip_args="torchvision==0.29.1")).values():
            merged = merge_pip_args(text, ["torchvision", "timm"])
            assert merge_pip_args(merged, ["torchvision", "timm"]) == merged  # idempotent
            if "extra-pip-args" in text:
                assert 'extra-pip-args: "torchvision==0.29.1 timm"' in merged


def test_constraints_gain_pins_only_for_new_packages():
    from gate.scaffold.add import merge_constraints

    text = "# pins\ntorch==2.0.0\n"
    assert merge_constraints(text, ["torch"]) == text  # an existing pin is the user's
    assert merge_constraints(text, ["not-an-installed-package"]) == text  # nothing installed to pin

"""Model names never become paths outside the baseline folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import ConfigError
from gate.formats.baseline import baseline_path


@pytest.mark.parametrize("name", ["tiny-cnn", "resnet18", "vit_b.16", "a", "m" * 128, "...", "-x", "a..b"])
def test_valid_names_give_a_direct_child(tmp_path, name):
    path = baseline_path(tmp_path, name)
    assert path == tmp_path / f"{name}.msgpack.zst"
    assert path.parent == tmp_path
    assert path.resolve().parent == tmp_path.resolve()


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("../x", "may only contain lowercase letters, digits"),
        ("/abs", "may only contain"),
        ("a/b", "may only contain"),
        ("a\\b", "may only contain"),
        ("", "must not be empty"),
        ("Upper", "may only contain"),
        ("m" * 129, "is 129 characters long (limit 128)"),
        (".", "must not be '.' or '..'"),
        ("..", "must not be '.' or '..'"),
        ("a\x00b", "may only contain"),
        ("a b", "may only contain"),
        ("na\u00efve", "may only contain"),
        ("x\n", "may only contain"),
        (None, "must be a string"),
    ],
)
def test_invalid_names_are_config_errors(tmp_path, name, fragment):
    with pytest.raises(ConfigError) as info:
        baseline_path(tmp_path, name)
    message = str(info.value)
    assert message.startswith("model name ")
    assert fragment in message
    assert "\n" not in message


def test_accepts_str_paths_too():
    assert baseline_path(Path("baselines"), "m") == Path("baselines/m.msgpack.zst")

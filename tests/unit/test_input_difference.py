"""What a baseline's refusal of other inputs says changed (gate.model.inputs.difference): each kind of
``inputs`` points at its own cause, so the person fixes the right thing (the inputs function, the file,
the declared seed or range)."""

from __future__ import annotations

import pytest

from gate.model.inputs import difference

RECORDED = [{"name": "x", "dtype": "float32", "shape": [2, 8], "digest": "a" * 16}]
NOW = [{**RECORDED[0], "digest": "b" * 16}]


@pytest.mark.parametrize("source,cause", [
    ("models:inputs",
     "its inputs function `models:inputs` gives others; it runs with torch's generator at the seed"),
    ("/repo/data/x.npz", "its file changed"),
    (("declared",), "its seed or range changed"),
    ((), "its seed, range, file or inputs function changed"),
])
def test_other_values_name_what_gives_them(source, cause):
    assert difference(RECORDED, NOW, source) == f"input `x`: other values, same dtype and shape ({cause})"
    assert difference(RECORDED, RECORDED, source) is None

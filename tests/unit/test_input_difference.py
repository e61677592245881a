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


def test_a_bool_input_is_drawn_from_its_declared_range():
    """A mask declared all true (low = 1) or all false (high = 1) is drawn so, never as random 0/1 under
    the declared range's digest. Twin: with no range, 0 and 1 as before (baselines keep their inputs)."""
    import numpy as np

    from gate.config.types import InputSpec
    from gate.model.inputs import generate

    def drawn(low=None, high=None):
        return generate((InputSpec("mask", (4, 64), "bool", low, high),), 0)[0]

    assert drawn(low=1).all() and not drawn(high=1).any()
    free = drawn()
    assert free.dtype == np.bool_ and free.any() and not free.all()
    rng = np.random.default_rng([0, 0])  # the draw with no range is the one before ranges were honoured
    assert np.array_equal(free, rng.integers(0, 2, size=(4, 64)).astype(np.bool_))


def test_inputs_in_another_order_say_so_not_that_each_drew_other_values():
    """Declared inputs draw their values in order, so a forward whose arguments swapped gives each input other
    values: the order is the cause. Twin: an order kept with one input's values changed still names it."""
    y = {"name": "y", "dtype": "float32", "shape": [2, 6], "digest": "c" * 16}
    swapped = [{**y, "digest": "d" * 16}, NOW[0]]
    assert difference([RECORDED[0], y], swapped, ("declared",)) == \
        "the inputs are in another order, `y`, `x` where the baseline has `x`, `y`"
    assert difference([RECORDED[0], y], [NOW[0], y], ("declared",)) == \
        "input `x`: other values, same dtype and shape (its seed or range changed)"

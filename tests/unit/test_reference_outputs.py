"""When two float64 output sets under one key are the same output (gate/runners/reference_outputs.py):
within the reference's noise on finite values, with NaN and infinities at the same places (NaN - NaN
is NaN, and a relative L2 of NaN is no evidence of a difference)."""

from __future__ import annotations

import numpy as np
import pytest

from gate.runners.reference_outputs import ReferenceOutputs
from gate.store import Entry


def stored(tmp_path, arrays) -> Entry:
    made = ReferenceOutputs(arrays, 1e-9)
    made.write(tmp_path)
    return Entry(tmp_path, "reference", "k", made.output_digest(), {}, ("outputs.npz",))


def with_nan(*at: int, inf: int | None = None) -> np.ndarray:
    a = np.linspace(-1.0, 1.0, 8)
    a[list(at)] = np.nan
    if inf is not None:
        a[inf] = -np.inf
    return a


@pytest.mark.parametrize("now, agrees", [
    (with_nan(2, inf=5), True),  # the same output
    (with_nan(2, inf=5) * (1 + 1e-13), True),  # the reference's noise on the finite values
    (with_nan(3, inf=5), False),  # NaN elsewhere
    (with_nan(2), False),  # an infinity gone
    (with_nan(2, inf=5) * 1.001, False),  # a finite value moved
])
def test_non_finite_outputs_agree_only_where_they_are_the_same(tmp_path, now, agrees):
    entry = stored(tmp_path, [with_nan(2, inf=5)])
    said = ReferenceOutputs([now], 1e-9).differs_from(entry)
    assert (said is None) is agrees, said

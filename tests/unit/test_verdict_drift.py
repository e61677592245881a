"""gate.verdict.drift: how far a reference moved, where huge fill values (a mask's -1e30) dominate its
norm. Fingerprints built by hand (tests/support/verdicts.py): each measure at its limit and just past it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gate.config import Tolerance
from gate.verdict.checks import reference_rows
from gate.verdict.drift import drift, typical
from tests.support.verdicts import baseline, fp, run, spec

FILLED = (-1e30,) * 5 + (0.5, 1.0, 2.0, 3.0)  # half the elements masked with -1e30


def filled(top: float = 3.0):
    return dataclasses.replace(fp(), min=-1e30, max=4.0, quantiles=(*FILLED[:-1], top))


@pytest.mark.parametrize("past", [False, True])
def test_a_quantile_off_the_fill_plateau_that_moved_fails_at_its_limit_though_relative_l2_cannot_see_it(past):
    moved = (3.0003 - 3.0) / 3.0003  # q0.999 moved, relative to the larger of the two
    limit = moved / (1 + 1e-9) if past else moved
    now = run(b=filled(3.0003), output=filled(3.0003))
    rows = {r.layer: r for r in reference_rows(now, baseline(b=filled(), output=filled()),
                                               spec(Tolerance(reference=limit)))}
    assert (rows["b"].failed, rows["b"].value) == (past, pytest.approx(moved))
    if past:
        words = "(quantile q0.999, relative to its magnitude or the quantiles' typical one; "
        assert words in rows["b"].message


def test_fills_do_not_set_the_scale_even_added_to_ordinary_values():
    """-1e9 added to ordinary values in float64 keeps them apart by their own size: still a plateau."""
    fills = (-1e9 - 2.5, -1e9 - 2, -1e9 - 1, -1e9, -1e9 + 1)
    added = dataclasses.replace(fp(), min=-1e9 - 3, max=4.0, quantiles=(*fills, 0.5, 1.0, 2.0, 3.0))
    assert typical(added) == typical(filled()) == 3.0


def test_a_quantile_near_zero_moved_by_a_refactors_rounding_stays_far_under_the_limit():
    """A refactor moves a value by ~1e-16 of the magnitudes it was computed from, however near zero it
    lands: the quantiles' typical magnitude, not its own, is its scale."""
    base = dataclasses.replace(fp(), quantiles=(-1.0, -0.5, -0.1, -1e-3, 1e-17, 1e-3, 0.1, 0.5, 1.0))
    now = dataclasses.replace(base, quantiles=(*base.quantiles[:4], 2e-16, *base.quantiles[5:]))
    assert drift(now, base).value == pytest.approx(1.9e-16)
    assert drift(base, base).value == 0.0


@pytest.mark.parametrize("fill", [-1e9, -1e4])
def test_a_runtime_that_moved_the_values_beside_fills_has_that_error_and_float32_rounding_stays_small(fill):
    """Real fingerprints: a runtime adding 1e-3 to every ordinary value of masked logits has an error near
    1e-3 (relative L2 alone: 1e-12, hidden by the fills); the same values in float32 stay under 1e-6; a
    tensor without fills keeps relative L2 as its error."""
    from gate.fingerprint import fingerprint, relative_error
    from gate.verdict.against_reference import error_against

    rng = np.random.default_rng(0)
    values = rng.standard_normal((64, 256))
    masked = np.where(np.arange(256) % 2 == 0, fill, values)
    ref = fingerprint(masked)
    shifted = np.where(np.arange(256) % 2 == 0, fill, values + 1e-3).astype(np.float32)
    assert relative_error(fingerprint(shifted), ref) < 1e-6 < error_against(fingerprint(shifted), ref)
    assert error_against(fingerprint(shifted), ref) == pytest.approx(1e-3 / np.abs(values).max(), rel=0.5)
    assert error_against(fingerprint(masked.astype(np.float32)), ref) < 1e-6
    plain = fingerprint(values)
    assert error_against(fingerprint(values.astype(np.float32)), plain) == relative_error(
        fingerprint(values.astype(np.float32)), plain)


def test_a_sweep_compares_outputs_beside_fills_by_the_values_beside_them():
    """A sweep's pair or anchor (``comparisons.distance``) takes a runtime's measure: outputs whose fills
    dominate their norm differ by the move of the values beside them; outputs without fills by relative
    L2."""
    from gate.fingerprint import fingerprint, relative_error
    from gate.verdict.comparisons import distance

    values = np.random.default_rng(0).standard_normal((64, 256))
    masked = np.where(np.arange(256) % 2 == 0, -1e9, values)
    shifted = np.where(np.arange(256) % 2 == 0, -1e9, values + 1e-3)
    assert distance({"(model)": fingerprint(shifted)}, {"(model)": fingerprint(masked)}) > 1e-4
    rounded = fingerprint(masked.astype(np.float32))
    assert distance({"(model)": rounded}, {"(model)": fingerprint(masked)}) < 1e-6
    now, base = fingerprint(values + 1e-3), fingerprint(values)
    assert distance({"(model)": now, "other": now}, {"(model)": base}) == relative_error(now, base)

"""gate.core.detections: a runtime's detections matched one to one with the reference's, on tensors
built by hand so every IoU, score and leftover is one the test chose."""

from __future__ import annotations

import numpy as np
import pytest

from gate.core.detections import MATCH_IOU, MAX_DETECTIONS, Detections, find, iou_matrix, problem

REF_BOXES = np.array([[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], dtype=np.float64)
REF_SCORES = np.array([0.9, 0.6, 0.2])
REF_LABELS = np.array([1, 2, 1], dtype=np.float64)  # the reference's outputs arrive as float64


def outputs(boxes, scores, labels, *, ref=(REF_BOXES, REF_SCORES, REF_LABELS), extra=()):
    names = ("(model)[0][boxes]", "(model)[0][scores]", "(model)[0][labels]")
    return [(n, np.asarray(a), np.asarray(r)) for n, a, r in zip(names, (boxes, scores, labels), ref, strict=True)] \
        + list(extra)


def only(found: list[Detections]) -> Detections:
    (d,) = found
    return d


def test_iou_of_same_disjoint_and_half_shifted_boxes():
    a = np.array([[0, 0, 10, 10]], dtype=np.float64)
    b = np.array([[0, 0, 10, 10], [20, 0, 30, 10], [5, 0, 15, 10]], dtype=np.float64)
    assert iou_matrix(a, b).tolist() == [[1.0, 0.0, pytest.approx(50 / 150)]]


def test_identical_detections_all_match_in_reference_score_order():
    d = only(find(outputs(REF_BOXES.astype(np.float32), REF_SCORES.astype(np.float32), REF_LABELS.astype(np.int64)),
                  {"(model)[0][boxes]"}))
    assert (d.boxes, d.scores, d.labels, d.attributes) == ("(model)[0][boxes]", "(model)[0][scores]",
                                                           "(model)[0][labels]", ())
    assert [round(p[0], 6) for p in d.pairs] == [0.9, 0.6, 0.2] and all(p[2] == 1.0 for p in d.pairs)
    assert d.unmatched_reference == () == d.unmatched_actual and (d.reference, d.actual) == (3, 3)


def test_a_box_the_runtime_keeps_beyond_the_reference_is_left_over_with_its_score():
    boxes = np.vstack([REF_BOXES, [[60, 60, 70, 70]]])
    d = only(find(outputs(boxes, np.append(REF_SCORES, 0.3), np.append(REF_LABELS, 1)), set()))  # sizes differ
    assert len(d.pairs) == 3 and d.unmatched_actual == (0.3,) and d.unmatched_reference == () and d.actual == 4


def test_a_reference_without_detections_leaves_every_runtime_detection_over():
    empty = (np.zeros((0, 4)), np.zeros(0), np.zeros(0))
    d = only(find(outputs(REF_BOXES[:2], REF_SCORES[:2], REF_LABELS[:2], ref=empty), set()))
    assert d.pairs == () and d.unmatched_actual == (0.9, 0.6) and (d.reference, d.actual) == (0, 2)


def test_labels_must_agree_for_a_match():
    labels = REF_LABELS.copy()
    labels[0] = 2
    d = only(find(outputs(REF_BOXES, REF_SCORES, labels), {"(model)[0][labels]"}))
    assert len(d.pairs) == 2 and d.unmatched_reference == (0.9,) and d.unmatched_actual == (0.9,)


@pytest.mark.parametrize("shift, matched", [(10 / 3, True), (10 / 3 + 1e-6, False)])
def test_a_match_needs_iou_of_at_least_one_half(shift, matched):
    """Shifting a 10x10 box by 10/3 leaves IoU exactly 1/2; a hair more and it is another box."""
    boxes = REF_BOXES.copy()
    boxes[1] += [shift, 0, shift, 0]
    assert iou_matrix(REF_BOXES[1:2], boxes[1:2])[0, 0] == pytest.approx(MATCH_IOU, abs=1e-6)
    d = only(find(outputs(boxes, REF_SCORES, REF_LABELS), {"(model)[0][boxes]"}))
    assert (len(d.pairs) == 3) is matched


def test_each_runtime_box_is_taken_once_by_the_highest_scoring_reference_box():
    ref = (np.array([[0, 0, 10, 10], [0, 0, 10, 9]], dtype=np.float64), np.array([0.8, 0.7]), np.array([1.0, 1.0]))
    d = only(find(outputs(np.array([[0.0, 0, 10, 10]]), np.array([0.75]), np.array([1]), ref=ref), set()))
    assert [p[0] for p in d.pairs] == [0.8] and d.unmatched_reference == (0.7,)


def test_attributes_are_compared_over_the_pairs_in_pair_order():
    masks_ref = np.ones((3, 2, 2))
    masks = masks_ref.copy()
    masks[0] *= 1.5  # the first detection's mask is 50 % off
    extra = [("(model)[0][masks]", masks, masks_ref)]
    d = only(find(outputs(REF_BOXES, REF_SCORES, REF_LABELS, extra=extra), {"(model)[0][masks]"}))
    assert d.attributes == ("(model)[0][masks]",)
    assert d.attribute_errors["(model)[0][masks]"] == pytest.approx((0.5, 0.0, 0.0))


def test_groups_without_a_data_dependent_member_or_a_size_change_are_not_matched():
    assert find(outputs(REF_BOXES, REF_SCORES, REF_LABELS), set()) == []


@pytest.mark.parametrize("broken", ["nan_score", "no_scores", "not_boxes"])
def test_what_is_not_a_detection_group_is_left_to_the_other_rules(broken):
    boxes, scores = REF_BOXES.copy(), REF_SCORES.copy()
    out = outputs(boxes, scores, REF_LABELS)
    if broken == "nan_score":
        scores[1] = np.nan
    elif broken == "no_scores":
        out = [o for o in out if not o[0].endswith("[scores]")]
    else:
        out[0] = ("(model)[0][boxes]", boxes[:, :3], REF_BOXES[:, :3])
    assert find(out, {"(model)[0][boxes]"}) == []


def test_only_the_highest_scores_are_matched_past_the_cap():
    n = MAX_DETECTIONS + 5
    boxes = np.stack([np.arange(n) * 20.0, np.zeros(n), np.arange(n) * 20.0 + 10, np.full(n, 10.0)], 1)
    scores = np.linspace(1, 0, n)
    d = only(find([("(model)[boxes]", boxes, boxes), ("(model)[scores]", scores, scores)], {"(model)[boxes]"}))
    assert len(d.pairs) == MAX_DETECTIONS and (d.reference, d.actual) == (n, n) and d.labels is None


def test_facts_round_trip_and_inconsistent_facts_are_named():
    d = only(find(outputs(REF_BOXES[:2], REF_SCORES[:2], REF_LABELS[:2]), set()))
    doc = d.to_dict()
    assert Detections.from_dict(doc) == d and problem(doc) is None
    assert "one value per pair" in problem({**doc, "iou": doc["iou"][:1]})
    assert "2 pairs but 3 reference and 1 runtime" in problem({**doc, "actual": 1})
    assert "must name an attribute" in problem({**doc, "attribute_errors": {"x": [0.0, 0.0]}})

"""A detector's output matched against the float64 reference's: the facts the ``detections`` rule
judges (``gate.verdict.data_dependent``).

Post-processing (a score threshold, NMS, a top-k cut) keeps other boxes in float32 than in float64 at
its margins, so, as a detection benchmark does, boxes are matched one to one: in the reference's score
order, each reference box takes the same-label runtime box of largest IoU, if at least ``MATCH_IOU``.
A group is the elements of one output container with one row per detection: boxes ``[N, 4]``
(x1, y1, x2, y2), scores ``[N]``, optional integer labels ``[N]``; every other member is an attribute
compared over the pairs. No torch here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

MATCH_IOU = 0.5  # the same object: COCO's matching threshold
MAX_DETECTIONS = 1000  # kept per side, highest scores first (the matching is N x M)
MAX_ATTRIBUTES = 16


class Roles(TypedDict):
    """A group's members by role (element keys)."""

    boxes: str
    scores: str
    labels: str | None
    attributes: list[str]


@dataclass(frozen=True)
class Detections:
    """One detection group of a runtime, matched against the reference's."""

    boxes: str  # the group's members, by layer name
    scores: str
    labels: str | None
    attributes: tuple[str, ...]
    reference: int  # detections in the reference's output and in the runtime's (before the cap)
    actual: int
    pairs: tuple[tuple[float, float, float], ...]  # (reference score, runtime score, IoU), reference score order
    unmatched_reference: tuple[float, ...]  # scores of reference detections without a match, highest first
    unmatched_actual: tuple[float, ...]
    attribute_errors: dict[str, tuple[float, ...]] = field(default_factory=dict)  # per pair: relative L2

    @property
    def members(self) -> tuple[str, ...]:
        return (self.boxes, self.scores, *((self.labels,) if self.labels else ()), *self.attributes)

    def role(self, layer: str) -> str:
        """``boxes``, ``scores``, ``labels`` or ``attribute``."""
        return next((r for r, n in (("boxes", self.boxes), ("scores", self.scores), ("labels", self.labels))
                     if n == layer), "attribute")

    def to_dict(self) -> dict[str, Any]:
        return {"boxes": self.boxes, "scores": self.scores, "labels": self.labels,
                "attributes": list(self.attributes), "reference": self.reference, "actual": self.actual,
                "reference_scores": [p[0] for p in self.pairs], "actual_scores": [p[1] for p in self.pairs],
                "iou": [p[2] for p in self.pairs], "unmatched_reference": list(self.unmatched_reference),
                "unmatched_actual": list(self.unmatched_actual),
                "attribute_errors": {k: list(v) for k, v in self.attribute_errors.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Detections:
        """From a document the result schema has validated (``check`` it first)."""
        pairs = tuple(zip(d["reference_scores"], d["actual_scores"], d["iou"], strict=True))
        return cls(d["boxes"], d["scores"], d["labels"], tuple(d["attributes"]), d["reference"], d["actual"],
                   pairs, tuple(d["unmatched_reference"]), tuple(d["unmatched_actual"]),
                   {k: tuple(v) for k, v in d["attribute_errors"].items()})


def problem(d: dict[str, Any]) -> str | None:
    """What a structurally valid document breaks across its fields, or None."""
    n = len(d["reference_scores"])
    if len(d["actual_scores"]) != n or len(d["iou"]) != n:
        return "reference_scores, actual_scores and iou must have one value per pair"
    if n > min(d["reference"], d["actual"]):
        return f"{n} pairs but {d['reference']} reference and {d['actual']} runtime detections"
    for name, errors in d["attribute_errors"].items():
        if name not in d["attributes"] or len(errors) != n:
            return f"attribute_errors[{name!r}] must name an attribute and have one value per pair"
    return None


def _key(layer: str) -> tuple[str, str] | None:
    """(container, element) of an output element name: ``(model)[0][boxes]`` -> (``(model)[0]``, ``boxes``)."""
    if not layer.endswith("]") or "[" not in layer:
        return None
    cut = layer.rindex("[")
    return layer[:cut], layer[cut + 1:-1]


def _pick(members: dict[str, tuple[np.ndarray, np.ndarray]], want: str,
          fits: Callable[[np.ndarray], bool]) -> str | None:
    """The member named ``want`` if it fits on both sides, else the first that does."""
    fitting = [k for k, (a, r) in members.items() if fits(a) and fits(r)]
    return want if want in fitting else next(iter(fitting), None)


def _floating(x: np.ndarray) -> bool:
    return np.issubdtype(x.dtype, np.floating)


def _integral(x: np.ndarray) -> bool:
    """Integers, or floats holding only integers (outputs may arrive as float64), and not empty."""
    return x.size > 0 and (not _floating(x) or bool(np.all(np.isfinite(x)) and np.all(x == np.round(x))))


def _group(members: dict[str, tuple[np.ndarray, np.ndarray]]) -> Roles | None:
    """The roles of a container's members (by element key), or None when it holds no box set."""
    boxes = _pick(members, "boxes", lambda x: _floating(x) and x.ndim == 2 and x.shape[1] == 4)
    if boxes is None:
        return None
    n_act, n_ref = members[boxes][0].shape[0], members[boxes][1].shape[0]
    rows = {k: v for k, v in members.items() if v[0].ndim and v[1].ndim and v[0].shape[0] == n_act
            and v[1].shape[0] == n_ref and v[0].shape[1:] == v[1].shape[1:]}
    # Scores hold fractions (a member of whole numbers is labels); labels hold whole numbers.
    scores = _pick({k: v for k, v in rows.items() if k != boxes}, "scores",
                   lambda x: _floating(x) and x.ndim == 1 and not _integral(x))
    if scores is None:
        return None
    labels = _pick({k: v for k, v in rows.items() if k not in (boxes, scores)}, "labels",
                   lambda x: x.ndim == 1 and (x.size == 0 or _integral(x)))
    rest = [k for k in rows if k not in (boxes, scores, labels)][:MAX_ATTRIBUTES]
    return {"boxes": boxes, "scores": scores, "labels": labels, "attributes": rest}


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of ``a`` [N, 4] with every box of ``b`` [M, 4], (x1, y1, x2, y2)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    w = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    h = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = w * h
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.clip(np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0), 0.0, 1.0)
    # Two identical empty boxes are the same box.
    return np.where((union <= 0) & (a[:, None, :] == b[None, :, :]).all(-1), 1.0, iou)


def _greedy(iou: np.ndarray) -> list[tuple[int, int]]:
    """Reference rows in order, each taking the free runtime column of largest IoU >= MATCH_IOU."""
    taken = np.zeros(iou.shape[1], dtype=bool)
    pairs = []
    for i in range(iou.shape[0]):
        row = np.where(taken, -1.0, iou[i])
        j = int(np.argmax(row)) if row.size else -1
        if j >= 0 and row[j] >= MATCH_IOU:
            taken[j] = True
            pairs.append((i, j))
    return pairs


def _relative(a: np.ndarray, r: np.ndarray) -> float:
    diff = float(np.linalg.norm(a.astype(np.float64) - r.astype(np.float64)))
    norm = float(np.linalg.norm(r.astype(np.float64)))
    return diff / norm if norm > 0 else (0.0 if diff == 0 else float("inf"))


def match(roles: Roles, names: dict[str, str], members: dict[str, tuple[np.ndarray, np.ndarray]]) -> Detections:
    """Match one group's runtime detections (``members[k][0]``) with the reference's (``[1]``)."""
    (ab, rb), (as_, rs) = members[roles["boxes"]], members[roles["scores"]]
    ra = np.argsort(-rs.astype(np.float64), kind="stable")[:MAX_DETECTIONS]
    aa = np.argsort(-as_.astype(np.float64), kind="stable")[:MAX_DETECTIONS]
    iou = iou_matrix(rb[ra], ab[aa])
    if roles["labels"] is not None:
        al, rl = members[roles["labels"]]
        iou = np.where(rl[ra][:, None] == al[aa][None, :], iou, -1.0)
    found = _greedy(iou)
    pairs = tuple((float(rs[ra[i]]), float(as_[aa[j]]), float(iou[i, j])) for i, j in found)
    left_r = sorted((float(rs[ra[i]]) for i in set(range(len(ra))) - {i for i, _ in found}), reverse=True)
    left_a = sorted((float(as_[aa[j]]) for j in set(range(len(aa))) - {j for _, j in found}), reverse=True)
    errors = {names[k]: tuple(_relative(members[k][0][aa[j]], members[k][1][ra[i]]) for i, j in found)
              for k in roles["attributes"]}
    return Detections(names[roles["boxes"]], names[roles["scores"]],
                      names[roles["labels"]] if roles["labels"] else None,
                      tuple(names[k] for k in roles["attributes"]), int(rb.shape[0]), int(ab.shape[0]), pairs,
                      tuple(left_r), tuple(left_a), errors)


def find(outputs: Iterable[tuple[str, np.ndarray, np.ndarray]], wanted: set[str]) -> list[Detections]:
    """The detection groups among the model's outputs ``(name, runtime, reference)``, matched: those
    with a member in ``wanted`` (data-dependent) or whose shapes differ between the two sides. A
    group holding NaN/Inf is left out (the verdict's non-finite check speaks for it)."""
    containers: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    names: dict[str, dict[str, str]] = {}
    for name, actual, expected in outputs:
        key = _key(name)
        if key is not None:
            containers.setdefault(key[0], {})[key[1]] = (np.asarray(actual), np.asarray(expected))
            names.setdefault(key[0], {})[key[1]] = name
    out = []
    for container, members in containers.items():
        roles = _group(members)
        if roles is None:
            continue
        used = [roles["boxes"], roles["scores"], *([roles["labels"]] if roles["labels"] else []), *roles["attributes"]]
        if not any(names[container][k] in wanted or members[k][0].shape != members[k][1].shape for k in used):
            continue
        if not all(np.isfinite(x).all() for k in used for x in members[k] if _floating(x)):
            continue
        out.append(match(roles, names[container], {k: members[k] for k in used}))
    return out


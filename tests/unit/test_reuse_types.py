"""Reuse as types: a baseline's content key through the format, the report's ``reuse`` through JSON,
the one line the console and the comment print, and what a changed key says."""

from __future__ import annotations

import pytest

from gate.core.reuse import Reuse
from gate.core.status import CacheState, FullWhy, KeyPart
from gate.errors import FormatError
from gate.formats.baseline import decode_baseline, encode_baseline
from gate.formats.baseline.testing import make_document
from gate.formats.fields import Obj
from gate.model.content_key import ContentKey
from gate.render.reuse_text import reuse_line

PARTS = {p.value: f"{i:016x}" for i, p in enumerate(KeyPart)}
KEY = {"key": "f" * 64, "parts": PARTS, "ops": 26, "sources": {"examples.zoo": "2cfa6c35e6c450fd"},
       "versions": {"torch": "2.14.1"}, "settings": {"export.opset": "default"}, "unseen": []}


def test_a_content_key_goes_through_the_baseline_format_unchanged():
    doc = make_document(3)
    doc["meta"]["content_key"] = KEY
    again = decode_baseline(encode_baseline(doc), "b.msgpack.zst")
    assert again["meta"]["content_key"] == KEY
    assert ContentKey.from_dict(again["meta"]["content_key"]).to_dict() == KEY


@pytest.mark.parametrize(("field", "value", "rule"), [
    ("parts", {**PARTS, "colour": "0" * 16}, "is not one of"),
    ("parts", {**PARTS, "code": "xyz"}, "16 hex digits"),
    ("key", "F" * 64, "sha256"),
])
def test_a_malformed_content_key_is_refused_naming_it(field, value, rule):
    """The writer walks the schema the reader does: one rule, both ways."""
    doc = make_document(3)
    doc["meta"]["content_key"] = {**KEY, field: value}
    with pytest.raises(FormatError, match=f"meta.content_key.*{rule}"):
        encode_baseline(doc)


def test_a_key_names_the_parts_that_differ_in_their_order():
    now = ContentKey.from_dict(KEY)
    then = ContentKey.from_dict({**KEY, "parts": {**PARTS, "weights": "0" * 16, "code": "1" * 16}})
    assert now.changed(then) == [KeyPart.CODE, KeyPart.WEIGHTS]
    assert now.changed(now) == []


def test_reuse_goes_through_the_report_and_refuses_unknown_words():
    r = Reuse("a" * 64, False, CacheState.MISS, FullWhy.KEY_CHANGED, [KeyPart.WEIGHTS], ["weights: 1 changed: `w`"],
              outputs=True)
    assert Reuse.from_dict(Obj(r.to_dict(), "r.json")) == r
    with pytest.raises(FormatError, match="changed"):
        Reuse.from_dict(Obj({**r.to_dict(), "changed": ["colour"]}, "r.json"))
    with pytest.raises(FormatError, match="cache"):
        Reuse.from_dict(Obj({**r.to_dict(), "cache": "maybe"}, "r.json"))


def test_the_line_says_what_was_reused_or_why_not():
    hit = Reuse("3a93016fddea" + "0" * 52, True, CacheState.HIT)
    assert reuse_line(hit) == ("reused: float64 reference from the baseline (content key 3a93016fddea unchanged); "
                               "shipped graph from the export cache")
    cold = Reuse("a" * 64, True, CacheState.MISS, outputs=False)
    assert "exported (not in the export cache; stored now)" in reuse_line(cold)
    assert "exact output metrics not measured" in reuse_line(cold)
    changed = Reuse("a" * 64, False, CacheState.MISS, FullWhy.KEY_CHANGED, [KeyPart.WEIGHTS],
                    ["weights: 1 changed: `fc.weight`"])
    assert reuse_line(changed).startswith("full run: float64 reference computed, the content key changed: weights: 1 "
                                          "changed: `fc.weight`")
    custom = Reuse("a" * 64, True, CacheState.HIT, unseen=["mylib.op.default"])
    assert "sees mylib.op.default by name only (--full checks them)" in reuse_line(custom)

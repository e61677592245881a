"""Reuse as types: a baseline's content key through the format, the report's ``reuse`` (its stages,
the shipped graph, alarms) through JSON, the lines the console and the comment print, and what a
changed key says."""

from __future__ import annotations

import pytest

from gate.core.fields import Obj
from gate.core.reuse import Alarm, Reuse, Shipped, StageRun
from gate.core.status import CacheState, FullWhy, KeyPart, Stage
from gate.errors import FormatError
from gate.formats.baseline import decode_baseline, encode_baseline
from gate.pipeline.content_key import ContentKey
from gate.render.reuse_text import alarm_line, reuse_line, reuse_tally
from tests.support.baseline_docs import make_document

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


def _stages(export: CacheState, reference: CacheState = CacheState.HIT, **transform) -> list[StageRun]:
    out = [StageRun(Stage.EXPORT, "e" * 64, export)]
    if transform:
        out.append(StageRun(Stage.TRANSFORM, transform.get("key"), transform["state"]))
    return out + [StageRun(Stage.REFERENCE, "3a93016fddea" + "0" * 52, reference)]


def test_reuse_goes_through_the_report_and_refuses_unknown_words():
    r = Reuse("a" * 64, FullWhy.KEY_CHANGED, _stages(CacheState.MISS, CacheState.MISS), [KeyPart.WEIGHTS],
              ["weights: 1 changed: `w`"], outputs=True, shipped=Shipped("1" * 64, "2" * 64),
              alarms=[Alarm(Stage.TRANSFORM, "t" * 64, "1" * 64, None, "it differs")], transform="m:t")
    d = r.to_dict()
    assert (d["reference"], d["cache"], d["why"]) == (False, "miss", "key-changed")  # the export's and reference's
    assert Reuse.from_dict(Obj(d, "r.json")) == r
    with pytest.raises(FormatError, match="changed"):
        Reuse.from_dict(Obj({**d, "changed": ["colour"]}, "r.json"))
    with pytest.raises(FormatError, match="state"):
        Reuse.from_dict(Obj({**d, "stages": [{"stage": "export", "key": None, "state": "maybe"}]}, "r.json"))
    with pytest.raises(FormatError, match="reference"):
        Reuse.from_dict(Obj({**d, "reference": True}, "r.json"))  # contradicts why


def test_a_report_without_stages_reads_its_export_from_cache():
    old = {"key": "a" * 64, "reference": True, "cache": "hit", "why": None, "changed": [], "details": []}
    r = Reuse.from_dict(Obj(old, "r.json"))
    assert r.reference and r.cache == CacheState.HIT and r.stage(Stage.EXPORT).reused


def test_the_line_says_what_each_stage_took_or_why_it_ran():
    hit = Reuse("a" * 64, None, _stages(CacheState.HIT))
    assert reuse_line(hit) == ("reused: float64 reference from the baseline (its key 3a93016fddea unchanged); "
                               "exported graph from the store")
    cold = Reuse("a" * 64, None, _stages(CacheState.MISS), outputs=False)
    assert "exported (not in the store; stored now)" in reuse_line(cold)
    assert "exact output metrics not measured" in reuse_line(cold)
    changed = Reuse("a" * 64, FullWhy.KEY_CHANGED, _stages(CacheState.MISS, CacheState.MISS), [KeyPart.WEIGHTS],
                    ["weights: 1 changed: `fc.weight`"])
    assert reuse_line(changed).startswith("full run: float64 reference computed, its key changed: weights: 1 "
                                          "changed: `fc.weight`")
    user = Reuse("a" * 64, None, _stages(CacheState.HIT, state=CacheState.UNKEYED), transform="m:t",
                 shipped=Shipped("1" * 64, "2" * 64))
    line = reuse_line(user)
    assert "transform `m:t` run (it reads what the gate cannot see: on every check)" in line
    assert "the shipped graph changed since the baseline (222222222222 -> 111111111111)" in line
    keyed = Reuse("a" * 64, None, _stages(CacheState.HIT, key="t" * 64, state=CacheState.HIT), transform="m:t",
                  shipped=Shipped("1" * 64, "1" * 64))
    assert "transform `m:t` its output from the store" in reuse_line(keyed) and "graph changed" not in reuse_line(keyed)
    bound = Reuse("a" * 64, FullWhy.KEY_CHANGED, [StageRun(Stage.STRUCTURE, "s" * 64, CacheState.HIT),
                                                  *_stages(CacheState.MISS, CacheState.MISS)])
    assert "graph from the stored structure with these weights bound (not exported again)" in reuse_line(bound)
    # its digest moved with the weights bound into it: the weights that changed say it, once
    bound.shipped = Shipped("1" * 64, "2" * 64)
    assert "shipped graph changed" not in reuse_line(bound)
    custom = Reuse("a" * 64, None, _stages(CacheState.HIT), unseen=["mylib.op.default"])
    assert "sees mylib.op.default by name only (--full checks them)" in reuse_line(custom)


def test_an_alarm_names_its_stage_and_key_and_is_counted():
    alarm = Alarm(Stage.EXPORT, "1a2b3c4d5e6f" + "0" * 52, "1" * 64, "2" * 64, "its digest differs")
    line = alarm_line(alarm)
    assert line.startswith("soundness alarm: the export stage's key 1a2b3c4d5e6f gave a second, different output "
                           "(its digest differs)") and "never reused on this machine" in line

    class Model:
        reuse = Reuse("a" * 64, None, _stages(CacheState.ALARM), alarms=[alarm])

    assert reuse_tally([Model()]).endswith("; 1 soundness alarm")


def test_the_reuse_tally_counts_every_model_of_the_run_and_says_nothing_where_none_was_reused():
    """A model that failed before its reference (no reuse said) is one of the run's models, not left out of
    the count; a run where every reference ran has no tally to give."""
    def model(reused: bool | None):
        return type("Model", (), {"reuse": None if reused is None else Reuse(
            "a" * 64, None if reused else FullWhy.KEY_CHANGED, _stages(CacheState.HIT))})()

    assert reuse_tally([model(True), model(False), model(None)]) == \
        "; float64 reference reused for 1 of 3 models (keys unchanged)"
    assert reuse_tally([model(False), model(None)]) == ""


def test_a_weights_key_part_that_moved_with_every_tensor_the_same_says_the_rule_changed():
    """The whole weights digest moved while every tensor's did not: only its rule did (``weights.RULE``),
    never "changed". Twin: one tensor's digest moved names it."""
    import dataclasses

    from gate.core.runs import Meta
    from gate.pipeline.reuse_explain import details
    from tests.support.verdicts import baseline

    key, base = ContentKey.from_dict(KEY), baseline()
    base = dataclasses.replace(base, meta=dataclasses.replace(base.meta, weights_digest="a" * 64,
                                                              tensor_digests={"w": "a" * 16, "b": "b" * 16}))
    rule = "weights: the same tensors, the whole digest's rule changed"
    for tensors, said in (({"w": "a" * 16, "b": "b" * 16}, rule),
                          ({"w": "c" * 16, "b": "b" * 16}, "weights: 1 changed: `w`")):
        now = Meta(weights_digest="c" * 64, tensor_digests=tensors)
        assert details([KeyPart.WEIGHTS], key, key, now, base) == [said]

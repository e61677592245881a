"""gate.verdict.report_file: the JSON report written, and read back as distrustfully as a baseline.

In the fork-safe flow ``comment`` reads a report a fork's run produced: every bad file is one
FormatError line naming the file and the key, never a traceback or a comment that reads
"None: layer 5 on None failed None".
"""

from __future__ import annotations

import json

import pytest

from gate.core.jsonsafe import plain
from gate.errors import FormatError
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.report_file import MAX_DEPTH, load_report, parse_report, report_document, write_report
from tests.support.verdicts import baseline, entry, run, runtime, spec


def a_report():
    r = run(moves={"b": 1e-3, "(model)": 1e-3})
    r.providers = [runtime(errs={"c": float("nan")})]
    return assemble([model_verdict(spec(), r, baseline(entry()), "b/m.msgpack.zst", "cmd")], {"backend": "numpy"})


def parse(doc) -> object:
    return parse_report(json.dumps(doc).encode() if not isinstance(doc, bytes) else doc, "r.json")


def test_written_report_reads_back_to_the_same_document(tmp_path):
    report = a_report()
    write_report(tmp_path / "r.json", report)
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text  # JSON has none: written as null
    again = load_report(tmp_path / "r.json")
    assert plain(report_document(again)) == plain(report_document(report)) == json.loads(text)
    assert again.first_regression.layer == "b" and again.models[0].providers[0].rows[1].failed


def one_line_error(doc, *words: str) -> str:
    with pytest.raises(FormatError) as err:
        parse(doc)
    message = str(err.value)
    assert message.startswith("report `r.json`: ") and "\n" not in message
    for w in words:
        assert w in message, message
    return message


def test_deep_nesting_is_refused_in_one_line():
    one_line_error(b"[" * 100_000 + b"]" * 100_000, f"nested deeper than {MAX_DEPTH} levels")
    doc = plain(a_report().to_dict())
    deep: list = []
    for _ in range(MAX_DEPTH):
        deep = [deep]
    doc["models"][0]["hints"] = [{"kind": "k", "layer": "l", "provider": "p", "message": "m", "evidence": {"x": deep}}]
    one_line_error(doc, "nested deeper")


def with_evidence_depth(levels: int) -> dict:
    """A report whose deepest value is ``levels`` deep: the report, models, a model, hints, a hint
    and its evidence are 6 levels; ``x`` adds nested lists up to ``levels``."""
    doc = plain(a_report().to_dict())
    deep: list = []
    for _ in range(levels - 7):
        deep = [deep]
    doc["models"][0]["hints"] = [{"kind": "k", "layer": "l", "provider": "p", "message": "m", "evidence": {"x": deep}}]
    return doc


def test_nesting_at_the_limit_is_read_and_one_past_it_refused():
    assert parse(with_evidence_depth(MAX_DEPTH)).models[0].hints[0].kind == "k"
    one_line_error(with_evidence_depth(MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} levels")


def test_first_regression_of_the_wrong_types_is_refused():
    doc = plain(a_report().to_dict())
    doc["first_regression"] = {"layer": 5, "model": None}
    one_line_error(doc, "`first_regression.layer`: expected a string, got a number")
    doc["first_regression"] = {"layer": "x", "check": "shape", "model": None, "provider": "p"}
    one_line_error(doc, "`first_regression`: must name its `model` and `provider`")


@pytest.mark.parametrize("where, value, words", [
    (("models", 0, "name"), 7, "`models[0].name`: expected a string, got a number"),
    (("models", 0, "status"), "fine", "`models[0].status`: 'fine' is not one of"),
    (("models", 0, "providers", 1, "layers", 0, "value"), "big", "`models[0].providers[1].layers[0].value`"),
    (("models", 0, "providers", 0, "name"), None, "`models[0].providers[0].name`: expected a string, got null"),
    (("models", 0, "baseline", "exists"), "yes", "`models[0].baseline.exists`: expected true or false"),
    (("verdict",), "maybe", "`verdict`"),
    (("models",), {}, "`models`: expected an array, got an object"),
    (("models", 0, "hints"), [{"kind": "k", "evidence": [1]}], "`models[0].hints[0].evidence`"),
])
def test_fields_of_the_wrong_type_are_named(where, value, words):
    doc = plain(a_report().to_dict())
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    one_line_error(doc, words)


def test_strict_json_no_nan_tokens_no_repeated_keys():
    one_line_error(b'{"schema": "parity-gate/report", "version": 1, "x": NaN}', "not JSON", "NaN")
    one_line_error(b'{"schema": "parity-gate/report", "schema": "x"}', "appears twice")
    one_line_error(b"\xff\xfe", "not JSON")


def test_unknown_keys_are_ignored():
    doc = plain(a_report().to_dict())
    doc["from_the_future"] = {"a": 1}
    doc["models"][0]["providers"][0]["extra"] = [1, 2]
    assert parse(doc).verdict == "regressed"


def test_wrong_schema_or_version_is_refused():
    one_line_error({"schema": "parity-gate/baseline", "version": 1}, "`schema`")
    one_line_error({"schema": "parity-gate/report", "version": 2}, "`version`: 2 is not supported")

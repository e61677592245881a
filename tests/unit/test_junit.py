"""gate.render.junit: the verdict as JUnit XML, valid against the schema CI systems read
(tests/data/junit/junit.xsd, checked by a real XML Schema validator): one test case per model and
provider; a failure names the first layer, its check and the next step."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gate.core.runs import RunError
from gate.core.status import ErrorStatus
from gate.render.junit import render_junit
from gate.verdict.report_file import parse_report
from gate.verdict.types import ModelVerdict, ProviderVerdict, Report
from tests.support import tools

xmlschema = tools.module("xmlschema")

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMA = xmlschema.XMLSchema(DATA / "junit" / "junit.xsd")


def fixture(name: str) -> Report:
    return parse_report((DATA / "reports" / f"{name}.json").read_bytes(), name)


def cases(text: str) -> dict[tuple[str, str], ET.Element]:
    return {(c.get("classname"), c.get("name")): c for c in ET.fromstring(text).iter("testcase")}


@pytest.mark.parametrize("name", ["pass", "regressed", "export-fail", "real-check-reference-drift"])
def test_every_report_is_valid_junit(name):
    SCHEMA.validate(render_junit(fixture(name)))


def test_the_schema_refuses_what_a_ci_system_would_not_read():
    two = '<testsuites><testsuite name="s" tests="1"><testcase name="a" classname="m"><failure/><error/></testcase>' \
          '</testsuite></testsuites>'
    nameless = '<testsuites><testsuite name="s" tests="1"><testcase name="a"/></testsuite></testsuites>'
    for text in (two, nameless):
        assert not SCHEMA.is_valid(text)


def test_a_regression_is_a_failure_naming_the_first_layer_its_check_and_the_next_step():
    text = render_junit(fixture("regressed"))
    found = cases(text)
    failure = found[("tiny-cnn", "CPUExecutionProvider float32")].find("failure")
    assert failure.get("message") == "first regression at conv2: error-growth 0.0042 > 2.76e-06"
    assert failure.get("type") == "error-growth"
    assert failure.text.splitlines()[-1] == (
        "next: the float64 reference holds; the ONNX graph, `CPUExecutionProvider` or code only they run (float32 or "
        "export-only) changed — compare the layer rows of the report.")
    assert found[("tiny-cnn", "torch-cpu float64 reference")].find("failure") is None  # it passed
    assert found[("tiny-cnn", "CUDAExecutionProvider float16")].find("skipped") is not None
    missing = found[("tiny-mlp", "(model)")].find("failure")
    assert missing.get("type") == "no-baseline" and "parity-gate update-baseline --model tiny-mlp" in missing.text
    suite = ET.fromstring(text).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "2", "0", "1")


def test_a_nan_inf_count_that_differs_is_no_limit_exceeded():
    report = json.loads((DATA / "reports" / "regressed.json").read_bytes())
    cpu = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    cpu["first_regression"].update(check="nonfinite", value=20.0, threshold=30.0)
    failure = cases(render_junit(parse_report(json.dumps(report).encode(), "t")))[
        ("tiny-cnn", "CPUExecutionProvider float32")].find("failure")
    assert failure.get("message") == "first regression at conv2: nonfinite 20 NaN/Inf, expected 30"


def test_a_model_that_crashed_is_an_error_whose_step_reproduces_it():
    reference = ProviderVerdict("torch-cpu", "reference", "float64", "cpu", "error", reason="did not run: boom\x07",
                                error_status=ErrorStatus.INFER_FAIL, where="models.py:3 in forward")
    model = ModelVerdict("m", "error", error=RunError(ErrorStatus.INFER_FAIL, "boom"), providers=[reference])
    text = render_junit(Report("error", [model]))
    SCHEMA.validate(text)  # the bell an exception carried is not written: XML 1.0 cannot hold it
    error = cases(text)[("m", "torch-cpu float64 reference")].find("error")
    assert error.get("type") == "INFER_FAIL" and error.get("message") == "INFER_FAIL: did not run: boom\ufffd"
    assert error.text == ("at models.py:3 in forward\nnext: it failed (INFER_FAIL). Reproduce with "
                          "`parity-gate check --model m`; the error is above.")


def test_the_json_report_and_junit_agree_on_what_failed():
    report = fixture("real-check-reference-drift")
    doc = json.loads((DATA / "reports" / "real-check-reference-drift.json").read_text())
    failed = {(m["name"], f"{p['name']} {p['precision']}" + (" reference" if p["role"] == "reference" else ""))
              for m in doc["models"] for p in m["providers"] if p["status"] in ("regressed", "no-baseline")}
    text = render_junit(report)
    assert {k for k, c in cases(text).items() if c.find("failure") is not None} == failed

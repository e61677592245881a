"""gate.render.markdown: full-document goldens, the size ladder, escaping; the typed report
reader it renders from (gate.verdict.report_file)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gate.errors import FormatError
from gate.render import COMMENT_LIMIT, Links, render_markdown
from gate.render.markdown import size
from gate.verdict.report_file import load_report, parse_report
from gate.verdict.types import Report
from tests.conftest import regold
from tests.support.github_text import acted_on

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
MARKER = "<!-- parity-gate:comment id=default -->"
LINKS = Links("https://github.example/octo/models/actions/runs/4242",
              "https://github.example/octo/models/actions/runs/4242/artifacts/99")


def render_fixture(name: str) -> str:
    return render_markdown(load_report(REPORTS / f"{name}.json"), marker=MARKER, links=LINKS)


def raw(name: str) -> dict:
    """A fixture as plain JSON, to change before it is read."""
    return json.loads((REPORTS / f"{name}.json").read_text(encoding="utf-8"))


def typed(report: dict) -> Report:
    return parse_report(json.dumps(report).encode(), "test")


@pytest.mark.parametrize("name", ["pass", "regressed", "export-fail"])
def test_full_markdown_matches_the_golden_file(name):
    golden = REPORTS / f"{name}.md"
    text = render_fixture(name)
    if regold():  # PARITY_GATE_REGOLD=1 (tests/README.md)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def test_regressed_headline_names_model_layer_provider_check_and_values():
    text = render_fixture("regressed")
    assert "### ❌ parity-gate: `tiny-cnn` regressed at layer `conv2` on `CPUExecutionProvider`" in text
    assert ("check **error-growth**: **0.0042** (≈ 9,500× the baseline 4.40e-07) > **2.76e-06**."
            in text)
    assert "```mermaid\nxychart-beta" in text
    assert "[workflow run](https://github.example/octo/models/actions/runs/4242)" in text
    assert "[report artifact](https://github.example/octo/models/actions/runs/4242/artifacts/99)" in text


def test_missing_baseline_says_which_command_creates_it():
    assert ("- `tiny-mlp`: no baseline yet: run `parity-gate update-baseline --model tiny-mlp` and commit "
            "`baselines/tiny-mlp.msgpack.zst`.") in render_fixture("regressed")


def test_skipped_provider_is_visible_on_a_pass_and_said_once():
    text = render_fixture("pass")
    assert "passed (1 provider run not checked, see below)" in text
    assert "`CUDAExecutionProvider` not checked: CUDAExecutionProvider not available here" in text
    assert text.count("CUDAExecutionProvider") == 2  # the notice names it, with its reason


def test_a_missing_baseline_is_not_counted_as_a_regression():
    text = render_fixture("regressed")
    assert "2 models, 11 layers, 3 providers: 1 regressed, 1 without a baseline." in text
    assert "regression(s)" not in text


def test_baseline_changes_lead_the_comment_and_name_the_models():
    text = render_fixture("regressed")
    block = text.split("\n\n")[1]
    assert block.startswith("> [!IMPORTANT]\n> **This pull request changes baselines:** `tiny-cnn` "
                            "(`baselines/tiny-cnn.msgpack.zst`).")
    assert "judged against the baselines this pull request writes" in block
    assert text.index("This pull request changes baselines") < text.index("### ❌ parity-gate")


def test_errors_are_said_as_multiples_of_the_baseline():
    text = render_fixture("regressed")
    assert "| 4 | `conv2` | `Conv2d` | ❌ fail | error-growth | 0.0042 (≈ 9,500×) |" in text
    assert "error-growth 0.0042 (≈ 9,500× the baseline) > 2.76e-06" in text


def test_nan_inf_counts_that_differ_are_said_as_counts_never_as_a_limit_or_a_multiple():
    """Fewer -Inf than the baseline (a mask moved): "20 NaN/Inf, expected 30", not "20 (≈ 0.67×) > 30"."""
    report = raw("regressed")
    nonfinite = {"check": "nonfinite", "value": 20.0, "threshold": 30.0,
                 "message": "reference has 20 -Inf; baseline 30 -Inf"}
    model = report["models"][0]
    cpu = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    for fr in (report["first_regression"], model["first_regression"], cpu["first_regression"]):
        fr.update(nonfinite)
    row = next(r for r in cpu["layers"] if r["layer"] == "conv2")
    row.update(nonfinite, baseline=30.0)
    text = render_markdown(typed(report), marker=MARKER, links=LINKS)
    assert "check **nonfinite**: **20** NaN/Inf, expected **30**." in text
    assert "`conv2` on `CPUExecutionProvider`: nonfinite 20 NaN/Inf, expected 30 |" in text
    assert "| 4 | `conv2` | `Conv2d` | ❌ fail | nonfinite | 20 | 30 | 30 |" in text
    assert "> **30**" not in text and "0.67×" not in text


def test_export_failure_is_an_error_not_a_pass():
    text = render_fixture("export-fail")
    assert text.splitlines()[2].startswith("### 💥 parity-gate: 1 model failed: `resnet18`")
    assert "**EXPORT\\_FAIL**" in text and "passed" not in text


def huge_report(n_layers: int = 10_000, fail_at: int = 7_321) -> Report:
    report = raw("regressed")
    model = report["models"][0]
    rows = []
    for i in range(n_layers):
        failing = i >= fail_at
        rows.append({"layer": f"blocks.{i // 4}.sub.{i % 4}.linear", "type": "Linear",
                     "status": "fail" if failing else "pass", "check": "error-growth",
                     "value": 3e-3 if failing else 1e-7 * (1 + i % 7), "threshold": 1e-6, "baseline": 1e-7,
                     "message": "error vs reference grew past 4 x baseline + 1e-6" if failing else None})
    first = {k: rows[fail_at][k] for k in ("layer", "type", "check", "value", "threshold", "message")}
    for p in model["providers"]:
        if p["name"] != "CUDAExecutionProvider":
            p["layers"] = copy.deepcopy(rows) if p["role"] == "runtime" else [
                {**r, "status": "pass", "value": 0.0, "message": None} for r in rows]
    model["layers"] = n_layers
    model["providers"][1]["first_regression"] = first
    report["first_regression"] = {"model": "tiny-cnn", "provider": "CPUExecutionProvider", "precision": "float32", **first}
    return typed(report)


def test_huge_report_fits_the_comment_limit_and_names_the_first_regression():
    text = render_markdown(huge_report(), marker=MARKER, links=LINKS)
    assert size(text) <= COMMENT_LIMIT
    assert "regressed at layer `blocks.1830.sub.1.linear` on `CPUExecutionProvider`" in text
    assert "This comment is shortened to fit GitHub's 65,536-character limit" in text
    assert "The full report is in the [job summary](https://github.example/octo/models/actions/runs/4242) and the [report artifact]" in text
    assert "| 7322 | `blocks.1830.sub.1.linear` |" in text  # the first failing row survives the cut


def test_limit_is_respected_at_every_size():
    report = huge_report(3_000, 100)
    for limit in (2_000, 5_000, 20_000, 65_536):
        text = render_markdown(report, marker=MARKER, links=LINKS, limit=limit)
        assert size(text) <= limit
        assert "`blocks.25.sub.0.linear`" in text


def test_exact_fit_is_not_shortened():
    report = load_report(REPORTS / "regressed.json")
    full = render_markdown(report, marker=MARKER, links=LINKS)
    assert size(full) > len(full)  # emoji outside the BMP count twice
    assert render_markdown(report, marker=MARKER, links=LINKS, limit=size(full)) == full
    assert "shortened" in render_markdown(report, marker=MARKER, links=LINKS, limit=size(full) - 1)


def test_hostile_names_cannot_break_tables_or_inject_html():
    report = raw("regressed")
    row = report["models"][0]["providers"][1]["layers"][3]
    row["layer"] = "a|b`c<script>"  # a line break in a name is refused where the report is read
    row["message"] = "<img src=x onerror=alert(1)> | **bold**"
    text = render_markdown(typed(report))
    assert "<script>" not in text.replace("``a\\|b`c<script>``", "")
    assert "<img" not in text
    assert "``a\\|b`c<script>``" in text


def test_not_a_report_is_a_format_error(tmp_path):
    bad = tmp_path / "baseline.json"
    bad.write_text(json.dumps({"format": "parity-gate/baseline", "version": 1}))
    with pytest.raises(FormatError, match=r"report `.*baseline.json`: `schema`: is None, expected 'parity-gate/report'"):
        load_report(bad)
    (tmp_path / "v2.json").write_text(json.dumps({"schema": "parity-gate/report", "version": 2}))
    with pytest.raises(FormatError, match="`version`: 2 is not supported"):
        load_report(tmp_path / "v2.json")
    (tmp_path / "trunc.json").write_text('{"schema": "parity-gate/rep')
    with pytest.raises(FormatError, match="not JSON"):
        load_report(tmp_path / "trunc.json")


def test_chart_buckets_long_models_and_keeps_a_single_spike():
    from gate.render.chart import MAX_POINTS, error_chart
    from gate.verdict.rows import Row
    from gate.verdict.types import ProviderVerdict

    layers = [Row("l", "", "pass", "error-growth", 1e-7, 1e-6) for _ in range(10_000)]
    layers[4_321].value = 1e-2
    chart = error_chart("m", ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "cpu", rows=layers))
    first_line = next(line for line in chart.splitlines() if line.strip().startswith("line ["))
    points = first_line.strip()[len("line ["):-1].split(", ")
    assert len(points) == MAX_POINTS and points.count("-2.00") == 1
    assert 'x-axis "layer, execution order (1..10000)" 1 --> 10000' in chart
    assert error_chart("m", ProviderVerdict("p", "runtime", "float32", "cpu", rows=[Row("l", "", "absent")])) is None


def test_chart_draws_leading_folded_layers_at_the_first_measured_error_not_at_its_floor():
    """Folded layers (no error) before the first measured one take its value: a dip to the chart's minimum
    would read as an exact match; later gaps carry the previous value."""
    from gate.render.chart import error_chart
    from gate.verdict.rows import Row
    from gate.verdict.types import ProviderVerdict

    rows = [Row("a", "", "folded"), Row("b", "", "pass", "error-growth", 1e-5, 1e-3), Row("c", "", "folded"),
            Row("d", "", "pass", "error-growth", 1e-6, 1e-3)]
    chart = error_chart("m", ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "cpu", rows=rows))
    errors, limits = (line.strip() for line in chart.splitlines() if line.strip().startswith("line ["))
    assert errors == "line [-5.00, -5.00, -5.00, -6.00]" and limits == "line [-3.00, -3.00, -3.00, -3.00]"


def _reports():
    from hypothesis import strategies as st

    text = st.text(max_size=30)
    num = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10**6))
    row = st.fixed_dictionaries({}, optional={
        "layer": text, "type": st.one_of(st.none(), text),
        "status": st.sampled_from(["pass", "fail", "folded", "absent", "new", "missing", "odd"]),
        "check": st.one_of(st.none(), text), "value": num, "threshold": num, "baseline": num,
        "message": st.one_of(st.none(), text),
        "exact": st.one_of(st.none(), st.dictionaries(
            st.sampled_from(["worst_index", "max_abs", "allclose", "mismatched", "expected"]),
            st.one_of(num, text, st.booleans(), st.lists(st.integers(), max_size=3)), max_size=4))})
    first = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "model": text, "provider": text, "layer": text, "type": text, "check": text, "value": num,
        "threshold": num, "message": st.one_of(st.none(), text), "precision": text}))
    provider = st.fixed_dictionaries({"layers": st.lists(row, max_size=30)}, optional={
        "name": text, "role": st.sampled_from(["reference", "runtime"]), "precision": text, "device": text,
        "status": st.sampled_from(["pass", "regressed", "skipped", "error", "no-baseline"]),
        "reason": st.one_of(st.none(), text), "checked": num, "failed": num, "folded": num,
        "latency_ms": num, "first_regression": first})
    model = st.fixed_dictionaries({"name": text, "providers": st.lists(provider, max_size=3)}, optional={
        "status": st.sampled_from(["pass", "regressed", "error", "no-baseline"]),
        "error": st.one_of(st.none(), st.fixed_dictionaries({"status": text, "message": text})),
        "baseline": st.fixed_dictionaries({"path": text, "exists": st.booleans()}),
        "exporter": st.one_of(st.none(), text), "export_fallback": st.one_of(st.none(), text),
        "opset": st.one_of(st.none(), st.integers(1, 30)), "layers": num,
        "reference": st.fixed_dictionaries({"device": text, "dtype": st.sampled_from(["float64", "float32"])}),
        "first_regression": first,
        "mapping": st.one_of(st.none(), st.dictionaries(st.sampled_from(["layers", "mapped", "folded", "absent"]),
                                                        st.one_of(num, text), max_size=4))})
    return st.fixed_dictionaries(
        {"schema": st.just("parity-gate/report"), "version": st.just(1),
         "verdict": st.sampled_from(["pass", "regressed", "error"]), "models": st.lists(model, max_size=4)},
        optional={"first_regression": first, "baseline_changes": st.lists(text, max_size=30),
                  "summary": st.fixed_dictionaries({}, optional={
                      "models": num, "layers": num, "providers": st.lists(text, max_size=3),
                      "regressions": num, "errors": num}),
                  "environment": st.dictionaries(st.sampled_from(["torch", "onnx", "python", "backend"]),
                                                 st.one_of(st.none(), text))})


def test_any_report_is_refused_in_one_line_or_renders_within_the_limit():
    from hypothesis import given, settings

    @settings(max_examples=300, deadline=None)
    @given(_reports())
    def check(report):
        try:
            parsed = parse_report(json.dumps(report).encode(), "fuzz.json")
        except FormatError as exc:  # refused: one line naming the file
            assert str(exc).startswith("report `fuzz.json`: ") and "\n" not in str(exc)
            return
        for limit in (1_500, COMMENT_LIMIT):
            text = render_markdown(parsed, marker=MARKER, links=LINKS, limit=limit)
            assert size(text) <= limit
        assert acted_on(text).active == []  # whatever it holds, it mentions and links no one

    check()


def test_a_report_written_by_check_renders():
    # Written by `parity-gate check --json` (main at e5ed489) on the example models: the torch-cpu
    # provider runs twice (float64 reference, float32 runtime), which the labels must tell apart.
    report = load_report(REPORTS / "real-check-reference-drift.json")
    text = render_markdown(report, marker=MARKER, links=LINKS)
    assert "### ❌ parity-gate: `tiny-cnn` regressed at layer `stem.0` on `torch-cpu` (float64)" in text
    assert "❌&nbsp;`torch-cpu`&nbsp;float64 ✅&nbsp;`torch-cpu`&nbsp;float32" in text
    assert text.count("<details open>") == 1


def test_pathological_report_is_cut_to_the_limit_with_the_pointer_kept():
    report = raw("export-fail")
    report["models"] = [dict(report["models"][0], name=f"model-{i:05d}") for i in range(3_000)]
    text = render_markdown(typed(report), marker=MARKER, links=LINKS, limit=3_000)
    assert size(text) <= 3_000
    assert text.startswith(MARKER) and "The full report is in the [job summary]" in text


def test_a_note_many_rows_share_is_said_once_below_the_table():
    from gate.render.layers_md import layer_table
    from gate.verdict.rows import Row
    from gate.verdict.types import ProviderVerdict

    absent = "not captured on this provider"
    rows = [Row(f"layer{i}", "Conv2d", "absent", message=absent) for i in range(214)]
    rows.append(Row("head", "Linear", "fail", "error-growth", 0.5, 0.01, 0.001, "error grew"))
    text, shown = layer_table("m", ProviderVerdict("CPUExecutionProvider", "runtime", "float32", "x86_64-avx2",
                                                   rows=rows), None, True)
    assert shown == 215 and text.count(absent) == 1 and text.count("| note 1 |") == 214
    assert "1. not captured on this provider (214 rows)" in text and "| error grew |" in text


def test_a_real_report_fits_on_a_screen_outside_details():
    """A check's own report (two changed models): the headline, the next steps and the overview are
    what a reader sees; each model's tables are collapsed under its name."""
    from tests.e2e.test_short_output import COMMENT_LINES, outside_details

    text = render_fixture("real-check-reference-drift")
    seen = outside_details(text)
    assert len(seen) <= COMMENT_LINES, "\n".join(seen)
    assert "```mermaid" not in "\n".join(seen)
    assert "<summary><b>tiny-cnn</b> · ❌ regressed · 22 layers</summary>" in text


def _first_regressions(report: dict) -> list[dict]:
    model = report["models"][0]
    return [report["first_regression"], model["first_regression"], model["providers"][1]["first_regression"]]


def _renamed(layer: str) -> str:
    report = raw("regressed")
    for fr in [*_first_regressions(report), report["models"][0]["providers"][1]["layers"][3]]:
        fr["layer"] = layer
    return render_markdown(typed(report))


def test_a_pipe_in_a_layer_name_is_escaped_in_table_cells_only():
    text = _renamed("d.a|b|c")
    assert "regressed at layer `d.a|b|c` on `CPUExecutionProvider`" in text
    assert "**First regression:** model `tiny-cnn`, layer `d.a|b|c` (" in text
    assert "| 4 | `d.a\\|b\\|c` | `Conv2d` |" in text
    assert "`d.a\\|b\\|c` on `CPUExecutionProvider`: error-growth" in text


def test_a_plain_layer_name_reads_as_written_in_and_out_of_tables():
    text = _renamed("layer_1.conv")
    assert "regressed at layer `layer_1.conv` on" in text and "| 4 | `layer_1.conv` | `Conv2d` |" in text


def test_a_shape_change_says_changed_where_a_value_would_be():
    report = raw("regressed")
    for fr in _first_regressions(report):
        fr.update(check="shape", value=None, threshold=None)
    text = render_markdown(typed(report))
    assert "check **shape**: changed." in text
    assert "`conv2` on `CPUExecutionProvider`: shape changed |" in text
    assert "—, threshold" not in text and "— > —" not in text


def test_a_models_error_is_said_once_and_its_other_places_point_to_it(tmp_path):
    """A baseline recorded for other inputs: the judge writes its error as the model's, and as the reason of
    the reference it stopped; the comment says it once (the notice) and points to it elsewhere. Twin: a
    runtime's own failure beside it keeps its reason in the provider table."""
    from gate.commands.judging import judge
    from gate.config import load_config
    from gate.core.runs import ModelRun, RunError
    from gate.core.status import ErrorStatus, Role, TargetStatus

    (tmp_path / "pyproject.toml").write_text('[tool.parity-gate]\n[[tool.parity-gate.models]]\nname = "tiny"\n'
                                             'factory = "m:f"\ninputs = [{ name = "x", shape = [2, 3] }]\n')
    cfg = load_config(tmp_path / "pyproject.toml")
    said = "baseline `b/tiny.msgpack.zst`: recorded for other inputs than model `tiny` declares now"
    report = judge(cfg, [(cfg.models[0], ModelRun("tiny", error=RunError(ErrorStatus.BAD_BASELINE, said)))])
    (model,) = report.models
    (ref,) = [p for p in model.providers if p.role == Role.REFERENCE]
    assert said in (ref.reason or "")  # the verdict keeps it: the renderer says it once
    runtime = copy.deepcopy(ref)
    runtime.role, runtime.name, runtime.status = Role.RUNTIME, "CPUExecutionProvider", TargetStatus.ERROR
    runtime.reason = "own: the session failed"
    model.providers.append(runtime)
    text = render_markdown(report)
    assert text.count("recorded for other inputs") == 1, text
    assert "**BAD\\_BASELINE**: the model's error, above" in text
    assert "💥 error — the model's error, above" in text
    assert "own: the session failed" in text

"""No text from a report, a leg or a result file becomes a workflow command in the log of a command run in
Actions (``GITHUB_ACTIONS=true``): real processes, their output read by the runner's rule. The runner cuts
lines at CR and LF, trims every leading whitespace character (U+00A0, U+3000, ... as well as space and tab)
and acts on a line that then starts with ``::``, or that holds ``##[`` anywhere. A name that holds a control
or line-separator character is refused where the file is read, in one line."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from gate.config.shards import Shard
from gate.core.runs import RunError
from gate.core.status import ErrorStatus
from gate.formats.results import write_runs
from gate.verdict.judge import assemble
from gate.verdict.report_file import load_report, write_report
from gate.verdict.shard import ShardRun
from tests.conftest import run_cli
from tests.e2e.test_verdict_trust import REPORTS, comment, fake  # noqa: F401 (fixture)
from tests.unit.test_results import make_run

VARIANTS = ("\n\u00a0::error title=parity-gate::all models passed\n\u3000::add-mask::fc",
            "\n::stop-commands::pause", "\r\u2003::notice::ok",
            "\n\t\u205f::warning::w ##[set-output name=v;]p")
WORDS = {"schema", "verdict", "status", "role", "error_status", "skip", "kind", "precision", "device",
         "check"}
NAMES = {"name", "model", "models", "layer", "provider", "providers", "other"}
OURS = ("::error title=parity-gate%3A ", "::notice::parity-gate: ", "::warning::parity-gate: ")
ACTIONS = {"GITHUB_ACTIONS": "true"}


def live_commands(output: str) -> list[str]:
    """The lines the runner would act on, besides parity-gate's own annotations."""
    return [line for line in re.split(r"\r\n|\r|\n", output)
            if (line.lstrip().startswith("::") and not line.startswith(OURS)) or "##[" in line]


def texts(value, variant: str, key: str = ""):
    """Every free text of a report (not its names, not its vocabulary) with ``variant`` appended."""
    if isinstance(value, dict):
        return {k: texts(v, variant, k) for k, v in value.items()}
    if isinstance(value, list):
        return [texts(v, variant, key) for v in value]
    return value + variant if isinstance(value, str) and key not in WORDS | NAMES else value


def with_layer(doc: dict, variant: str) -> dict:
    """The first row's layer name made to carry ``variant``."""
    doc = copy.deepcopy(doc)
    doc["models"][0]["providers"][1]["layers"][0]["layer"] += variant
    return doc


def assert_refused_in_one_line(proc, source: str) -> None:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and f"{source}" in proc.stderr and "control character" in proc.stderr
    assert live_commands(proc.stdout + proc.stderr) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_comment_prints_no_command_from_a_reports_text(fake, tmp_path, variant):  # noqa: F811
    for name in ("regressed", "export-fail"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(texts(json.loads((REPORTS / f"{name}.json").read_text()), variant)))
        proc = comment(fake, tmp_path, path)
        assert proc.returncode in (1, 3) and "Traceback" not in proc.stderr, proc.stderr
        assert "::error title=parity-gate%3A " in proc.stdout  # its own annotations still act
        assert live_commands(proc.stdout) == [] and live_commands(proc.stderr) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_comment_refuses_a_name_that_breaks_a_line(fake, tmp_path, variant):  # noqa: F811
    path = tmp_path / "named.json"
    path.write_text(json.dumps(with_layer(json.loads((REPORTS / "regressed.json").read_text()), variant)))
    assert_refused_in_one_line(comment(fake, tmp_path, path), "report `")


def legs(tmp_path: Path, variant: str, name: str = "regressed") -> list[str]:
    """Two legs of a sharded run of ``name``, each model's text carrying ``variant``."""
    whole = load_report(REPORTS / f"{name}.json")
    covered = tuple(m.name for m in whole.models)
    paths = []
    for k in (1, 2):
        models = [m for i, m in enumerate(copy.deepcopy(whole.models)) if i % 2 == k - 1]
        leg = assemble(models, whole.environment)
        leg.shard = ShardRun(Shard(k, 2), covered)
        write_report(tmp_path / f"leg{k}.json", leg)
        doc = texts(json.loads((tmp_path / f"leg{k}.json").read_text()), variant)
        (tmp_path / f"leg{k}.json").write_text(json.dumps(doc))
        paths.append(str(tmp_path / f"leg{k}.json"))
    return paths


@pytest.mark.parametrize("variant", VARIANTS)
def test_merge_prints_no_command_from_a_legs_text(tmp_path, variant):
    for name in ("regressed", "export-fail"):
        proc = run_cli("merge", *legs(tmp_path, variant, name), "--shards", "2", cwd=tmp_path, env=ACTIONS)
        assert proc.returncode in (1, 3) and "Traceback" not in proc.stderr, proc.stderr
        assert live_commands(proc.stdout) == [] and live_commands(proc.stderr) == []
        assert proc.stdout.splitlines()[-1].startswith(("FAILED | ", "ERROR | "))


def test_merge_refuses_a_leg_whose_name_breaks_a_line(tmp_path):
    paths = legs(tmp_path, "")
    doc = json.loads(Path(paths[0]).read_text())
    Path(paths[0]).write_text(json.dumps(with_layer(doc, VARIANTS[0])))
    proc = run_cli("merge", *paths, "--shards", "2", cwd=tmp_path, env=ACTIONS)
    assert_refused_in_one_line(proc, "leg1.json")


def test_merge_gives_the_verdict_comment_gives_to_a_forged_leg(tmp_path):
    paths = legs(tmp_path, "")
    for p in paths:  # each leg rewritten to claim a pass over its regressed rows
        doc = json.loads(Path(p).read_text())
        doc["verdict"], doc["first_regression"] = "pass", None
        for m in doc["models"]:
            m["status"], m["first_regression"] = "pass", None
            for t in m["providers"]:
                t["status"], t["first_regression"] = "pass", None
        Path(p).write_text(json.dumps(doc))
    proc = run_cli("merge", *paths, "--shards", "2", "--json", "merged.json", cwd=tmp_path, env=ACTIONS)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("judged by its rows: tiny-cnn · CPUExecutionProvider was written pass, its evidence says "
            "regressed") in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("FAILED | first regression: tiny-cnn conv2")
    assert load_report(tmp_path / "merged.json").verdict == "regressed"


CONFIG = """[tool.parity-gate]
providers = ["CPUExecutionProvider"]

[[tool.parity-gate.models]]
name = "m"
factory = "nowhere:m"
inputs = [{ name = "x", shape = [2, 12], dtype = "float32" }]
"""


@pytest.mark.parametrize("variant", VARIANTS)
def test_report_prints_no_command_from_a_result_files_text(tmp_path, variant):
    (tmp_path / "parity-gate.toml").write_text(CONFIG)
    run = make_run()
    run.error = RunError(ErrorStatus.EXPORT_FAIL, f"export failed{variant}", f"model.py:3{variant}")
    write_runs(tmp_path / "r.msgpack.zst", [run])
    proc = run_cli("report", "r.msgpack.zst", cwd=tmp_path, env=ACTIONS)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert live_commands(proc.stdout) == [] and live_commands(proc.stderr) == []
    assert "export failed" in proc.stdout


def test_report_refuses_a_result_file_whose_name_breaks_a_line(tmp_path):
    (tmp_path / "parity-gate.toml").write_text(CONFIG)
    run = make_run()
    run.layers[0].name = "fc" + VARIANTS[0]
    run.providers[0].layers = {run.layers[0].name: run.providers[0].layers["fc"]}
    run.onnx_map = {}
    write_runs(tmp_path / "r.msgpack.zst", [run])
    assert_refused_in_one_line(run_cli("report", "r.msgpack.zst", cwd=tmp_path, env=ACTIONS), "r.msgpack.zst")

"""scripts/bench_faults.py's counting (faultbench/scoring.py, tables.py): localization is claimed only
for faults with a module truth, a whole-graph fault is counted on its provider apart, and seconds per
check are over the rows that ran. No model runs here; the benchmark itself is the measurement."""

from __future__ import annotations

import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from faultbench import tables  # noqa: E402
from faultbench.scoring import summarize  # noqa: E402

FIRST = dict(first_layer="x", first_provider="p", check="c")
ROWS = [
    dict(kind="weight_1e3", group="model", truth="layer2.0.conv1", detected=True, localized=True, hint_ok=True,
         seconds=4.0, **FIRST),
    dict(kind="graph_fp16", group="graph", truth="layer2.1.bn1", detected=True, localized=False, hint_ok=True,
         seconds=3.0, full_seconds=5.0, agree=True, **FIRST),
    dict(kind="ep_bf16_hint", group="runtime", truth="*", detected=True, localized=True, hint_ok=True, seconds=9.0,
         **FIRST),
    dict(kind="rename_head", group="benign", false_positive=False, seconds=2.0),
    dict(kind="fold_batchnorm", group="benign", crashed=True, error="x", seconds=100.0),
    dict(kind="gelu_as_function", group="benign", applicable=False),
]


def test_a_fault_without_a_module_truth_is_never_counted_as_found_at_a_module():
    s = summarize("resnet18", ROWS, 1.0)
    assert (s["injected"], s["detected"], s["module_faults"], s["module_detected"], s["localized"]) == (3, 3, 2, 2, 1)
    assert (s["whole_graph"], s["whole_graph_on_provider"]) == (1, 1)
    assert (s["benign"], s["false_positives"]) == (2, 1)  # a crash is a false positive; n/a is no run
    assert s["seconds_per_check"] == (4.0 + 3.0 + 5.0 + 9.0 + 2.0) / 5  # the crashed row ran no check


def test_the_tables_say_what_was_localized_where():
    results = [dict(summary=summarize("resnet18", ROWS, 1.0), rows=ROWS)]
    row = tables.summary(results)[2]
    assert "| 3/3 | 1/2 of 2 | 1/1 |" in row
    faults = "\n".join(tables.faults(results))
    assert "| resnet18 | ep_bf16_hint | runtime | `*` |" in faults and "no module (on its provider: yes)" in faults

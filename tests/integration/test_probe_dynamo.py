"""gate.model.dispatch: the probe's trace and the float64 reference's watch load no Dynamo on a path that
compiles nothing (its import is a second of every check), and give the same trace where Dynamo is loaded, or
where the model's forward calls a ``torch.compile``d function (Dynamo kept out of the modes' own work, as
torch's guard does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = '''
import torch

def _act(x):
    return torch.nn.functional.gelu(x) * 2


class Net(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.act = torch.nn.Linear(4, 4), act

    def forward(self, x):
        return self.act(self.fc(x))


def plain():
    return Net(_act)


def compiled():  # torch.compile loads Dynamo: only this factory calls it
    return Net(torch.compile(_act, backend="eager"))
'''
PROBE = '''
import json, sys
from pathlib import Path
if sys.argv[2] == "loaded":
    import torch._dynamo
from gate.config import load_config
from gate.model import trace
from gate.model.build import build

from gate.runners.reference import run_reference

cfg = load_config(Path(sys.argv[1]))
(spec,) = cfg.select_models([sys.argv[3]])
built = build(spec, cfg.root)
p = trace.probe(built)
ref = run_reference(built, print)  # its dispatch mode watches what the float64 run computes below float64
print(json.dumps({"digest": p.trace, "ops": p.ops, "layers": [r.name for r in p.records],
                  "reference": [r.name for r in ref.records], "dynamo": "torch._dynamo" in sys.modules}))
'''


def _probe(tmp: Path, model: str, dynamo: str) -> dict:
    config = tmp / "parity-gate.toml"
    out = subprocess.run([sys.executable, "-c", PROBE, str(config), dynamo, model], cwd=tmp, check=True,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": f"{ROOT}:{tmp}"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_probe_loads_no_dynamo_and_traces_the_same_where_it_is_loaded_or_a_forward_compiles(tmp_path):
    (tmp_path / "dyn_models.py").write_text(MODELS)
    (tmp_path / "parity-gate.toml").write_text("".join(
        f'[[models]]\nname = "{m}"\nfactory = "dyn_models:{m}"\ninputs = [{{ name = "x", shape = [2, 4] }}]\n'
        for m in ("plain", "compiled")))
    alone = _probe(tmp_path, "plain", "alone")
    assert not alone["dynamo"] and alone["layers"] and alone["reference"] == alone["layers"]
    loaded = _probe(tmp_path, "plain", "loaded")
    assert loaded["dynamo"] and loaded["digest"] == alone["digest"] and loaded["layers"] == alone["layers"]
    # twin: a forward that calls a compiled function runs it eagerly under the trace: the same operations
    compiled = _probe(tmp_path, "compiled", "alone")
    assert compiled["dynamo"]
    assert (compiled["digest"], compiled["layers"]) == (alone["digest"], alone["layers"])

"""Faults made through what no key sees: the graph that ships changes while the model, its export
and every key of the gate stay as they were (docs/verdict.md#stages). Each rounds one deep weight of
the shipped graph to float16, as a float16 block list edited by mistake would:

- ``transform_data_file``: the transform reads a JSON file (``FAULTBENCH_DEPLOY`` names it) that lists
  the initializers to round, and the pull request edits only that file;
- ``transform_env``: the same transform reads ``FAULTBENCH_ROUND``, an environment variable;
- ``artifact_rebuilt``: the prebuilt ONNX file (``artifact =``) rebuilt with that weight rounded.

The weight is chosen, and its module found, by value (``graph_truth``): never from the metadata the
gate reads. Each fault is checked twice, on the default path (every stage its key allows from the
store) and with ``--full``: the default path must name the same first regression.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from faultbench import runs
from faultbench.faults import HINT_R
from faultbench.graph_truth import deep_weight, first_changed_module
from faultbench.models import ARCHS
from faultbench.scoring import score_fault
from gate.export import saved

DEPLOY_ENV, ROUND_ENV = "FAULTBENCH_DEPLOY", "FAULTBENCH_ROUND"
KINDS = ("transform_data_file", "transform_env", "artifact_rebuilt")


def rounded(proto: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """``proto`` with the named initializers rounded to float16 (and back to float32)."""
    for init in proto.graph.initializer:
        if init.name in names:
            value = numpy_helper.to_array(init).astype(np.float16).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(value, init.name))
    return proto


def transform(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The deployment transform: rounds what its data file and its environment variable list."""
    names = [n for n in os.environ.get(ROUND_ENV, "").split(",") if n]
    deploy = os.environ.get(DEPLOY_ENV)
    if deploy:
        names += json.loads(Path(deploy).read_text()).get("round", [])
    return rounded(proto, names)


_EXPORTS: dict[tuple[Path, str], tuple[Path, object]] = {}


def exported(folder: Path, model: str):
    """(the graph the gate's own exporter writes for the unchanged model, what a transform receives;
    the built model), once per model."""
    if (folder, model) not in _EXPORTS:
        from gate.config import load_config
        from gate.export.exporter import export
        from gate.model.build import build

        cfg = load_config(runs.Case(model, "base", ARCHS[model].inputs, tag="pick").config(folder))
        built = build(cfg.models[0], cfg.root)
        with built.fresh():
            graph = export(built)
        target = folder / f"build-{model}"
        saved.copy_model(graph.path, target)
        _EXPORTS[(folder, model)] = (target / saved.MODEL, built)
    return _EXPORTS[(folder, model)]


def node_truth(folder: Path, model: str, place, fault) -> tuple[str, str | None]:
    """(the value a graph fault touches, placed by ``place(proto) -> node index``; the first module
    whose output the fault changes, by value: ``graph_truth.first_changed_module``)."""
    path, built = exported(folder, model)
    proto = saved.load_model(path)
    value = proto.graph.node[place(proto)].output[0]
    return value, first_changed_module(proto, fault(saved.load_model(path)), built)


def twice(folder: Path, case: runs.Case) -> tuple[dict, dict, float, float]:
    default, s_default = runs.check(folder, case)
    full, s_full = runs.check(folder, case, full=True)
    return default, full, s_default, s_full


def row(kind: str, group: str, default: dict, full: dict, s_default: float, s_full: float, touched: str,
        module: str | None, hint=HINT_R) -> dict:
    """A fault's row, scored on the default path, with what ``--full`` found beside it."""
    out = dict(kind=kind, group=group, **score_fault(default, touched, module, hint))
    fr_full = full.get("first_regression") or {}
    out.update(full_first_layer=fr_full.get("layer"), full_first_provider=fr_full.get("provider"),
               full_verdict=full["verdict"], seconds=s_default, full_seconds=s_full,
               agree=(out["first_layer"], out["first_provider"], out["verdict"]) == (
                   fr_full.get("layer"), fr_full.get("provider"), full["verdict"]),
               reused=[s["stage"] for s in default["models"][0].get("reuse", {}).get("stages", [])
                       if s["state"] == "hit"])
    return out


def unseen_rows(folder: Path, model: str, wanted, log) -> list[dict]:
    if not any(wanted(k) for k in KINDS):
        return []
    path, built = exported(folder, model)
    artifact = folder / f"artifact-{model}" / path.name
    artifact.parent.mkdir(exist_ok=True)
    onnx.save(saved.load_model(path), str(artifact))  # a prebuilt file of one piece, as a team ships it
    init, module = deep_weight(saved.load_model(path), built.module)
    inputs, rows = ARCHS[model].inputs, []
    deploy = folder / f"deploy-{model}.json"
    deploy.write_text(json.dumps({"round": []}))
    os.environ[DEPLOY_ENV] = str(deploy)
    os.environ.pop(ROUND_ENV, None)
    try:
        case = runs.Case(model, "base", inputs, transform=f"unseen__{model}", tag="unseen", baselines="baselines-unseen")
        if wanted("transform_data_file") or wanted("transform_env"):
            runs.record(folder, case)
            runs.check(folder, case)  # the store as a pull request's first run finds it: the base's entries in
        for kind in ("transform_data_file", "transform_env"):
            if not wanted(kind):
                continue
            t0 = time.perf_counter()
            if kind == "transform_data_file":
                deploy.write_text(json.dumps({"round": [init]}))
            else:
                os.environ[ROUND_ENV] = init
            try:
                rows.append(row(kind, "unseen", *twice(folder, case), init, module))
            finally:
                deploy.write_text(json.dumps({"round": []}))
                os.environ.pop(ROUND_ENV, None)
            log(line(rows[-1], time.perf_counter() - t0))
        if wanted("artifact_rebuilt"):
            t0 = time.perf_counter()
            case = runs.Case(model, "base", inputs, artifact=str(artifact.relative_to(folder)), tag="artifact",
                             baselines="baselines-artifact")
            runs.record(folder, case)
            runs.check(folder, case)
            original = artifact.read_bytes()
            onnx.save(rounded(onnx.load(str(artifact)), [init]), str(artifact))
            try:
                rows.append(row("artifact_rebuilt", "unseen", *twice(folder, case), init, module))
            finally:
                artifact.write_bytes(original)
            log(line(rows[-1], time.perf_counter() - t0))
    finally:
        os.environ.pop(DEPLOY_ENV, None)
    return rows


def line(r: dict, seconds: float) -> str:
    return (f"  {r['kind']:26s} {r['verdict']:9s} first={r['first_layer']} ({r['first_provider']}, {r['check']}) "
            f"--full first={r['full_first_layer']} ({r['full_first_provider']}) agree={r['agree']} "
            f"truth={r['truth']} localized={r['localized']} reused={','.join(r['reused'])} {seconds:.1f}s")

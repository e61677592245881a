"""One zoo row through the real CLI, in a project of its own: the config and the factory module written
here, then ``update-baseline``; a clean ``check --full`` (every stage computed) and a clean ``check`` on
the default path (each stage from its key), both must pass; a ``check`` with one weight deep in the
model scaled by 1.001 (must fail, its first regression at that module); and a ``check`` whose transform
rounds one deep weight of the shipped graph to float16 (``graph_fault``: must fail on the execution
provider, at the module that weight is, found by value). Every command is its own process tree,
measured, under what is left of the row's time limit."""

from __future__ import annotations

import json
import os
import time
from enum import Enum
from pathlib import Path

from zoo.reasons import gate_message, provider_counts, shorten
from zoo.steps import Step, run

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """baseline-dir = "baselines"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "{name}"
factory = "zoo_models:build"
inputs = "zoo_models:inputs"
"""
GRAPH_CONFIG = CONFIG + 'transform = "zoo_models:graph_fault"\n'
FACTORY = '''"""The model this project gates: the zoo's {name} row."""

from zoo.factories import build_for, inputs_for
from zoo.graph_fault import graph_fault_for

build = build_for("{name}")
inputs = inputs_for("{name}")
graph_fault = graph_fault_for("{name}")
'''
EP = "CPUExecutionProvider"
TRUTH_ENV = "ZOO_GRAPH_TRUTH"  # where the graph fault's transform writes the weight it rounded (``graph_fault``)


class Status(str, Enum):
    GATED = "gated"  # both clean checks passed and both faults were named at their module
    SKIPPED = "skipped"  # the package the row needs is not installed
    BUILD_FAILED = "build-failed"  # the model does not build or run in PyTorch (before the gate)
    BASELINE_FAILED = "baseline-failed"  # update-baseline exited non-zero
    CLEAN_REGRESSED = "clean-regressed"  # the unchanged model failed its own baseline (exit 1)
    CLEAN_ERROR = "clean-error"  # the clean check could not judge every provider (exit 3)
    CLEAN_DEFAULT_FAILED = "clean-default-failed"  # the clean check on the default path did not pass
    FAULT_MISSED = "fault-missed"  # the faulted model passed
    FAULT_ELSEWHERE = "fault-elsewhere"  # the fault failed, first at a layer outside its module
    FAULT_ERROR = "fault-error"  # the faulted check exited neither 0 nor 1
    GRAPH_MISSED = "graph-missed"  # the graph fault passed
    GRAPH_ELSEWHERE = "graph-elsewhere"  # the graph fault failed, first outside its module or off the EP
    GRAPH_ERROR = "graph-error"  # the graph-faulted check exited neither 0 nor 1
    TIMEOUT = "timeout"  # the row ran past its time limit


def belongs(layer: str, module: str) -> bool:
    """A layer of ``module``: its output, a later call (``#k``) or an element (``[i]``) of it."""
    return layer == module or (layer.startswith(module) and layer[len(module)] in "#[")


def named_at(first: dict, module: str) -> bool:
    """The first regression is a layer of ``module``, or a value ``module`` was folded into."""
    return belongs(first["layer"], module) or any(belongs(x, module) for x in first.get("fused") or ())


def _env(fault: str | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ZOO_FAULT", TRUTH_ENV)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "scripts")])
    env["COLUMNS"] = "250"  # one console line per message
    if fault:
        env["ZOO_FAULT"] = fault
    return {**env, **(extra or {})}


class Row:
    def __init__(self, spec, python: str, folder: Path, limit: float) -> None:
        self.spec, self.python, self.folder = spec, python, folder
        self.deadline = time.monotonic() + limit
        self.out: dict = {"name": spec.name, "family": spec.family, "note": spec.note, "steps": {}}

    def _step(self, key: str, argv: list[str], fault: str | None = None, extra: dict[str, str] | None = None) -> Step:
        step = run(argv, self.folder, _env(fault, extra), self.deadline - time.monotonic())
        self.out["steps"][key] = step.to_dict()
        (self.folder / f"{key}.log").write_text(step.stdout + step.stderr)  # the whole message, kept with --keep
        return step

    def _done(self, status: Status, reason: str = "") -> dict:
        self.out["status"], self.out["reason"] = status.value, shorten(reason)
        self.out["gated"] = status is Status.GATED
        self.out["total_s"] = round(sum(s["wall_s"] for s in self.out["steps"].values()), 1)
        return self.out

    def _report(self, name: str) -> dict | None:
        path = self.folder / name
        return json.loads(path.read_text()) if path.exists() else None

    def run(self) -> dict:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "parity-gate.toml").write_text(CONFIG.format(name=self.spec.name))
        (self.folder / "graph-fault.toml").write_text(GRAPH_CONFIG.format(name=self.spec.name))
        (self.folder / "zoo_models.py").write_text(FACTORY.format(name=self.spec.name))
        gate = [self.python, "-m", "gate.cli"]
        pick = self._step("pick", [self.python, "-m", "zoo.pick", self.spec.name])
        if pick.timed_out:
            return self._done(Status.TIMEOUT, "building and running the model in PyTorch")
        picked = json.loads(pick.stdout.strip().splitlines()[-1]) if pick.stdout.strip() else {}
        if "missing" in picked:
            return self._done(Status.SKIPPED, f"{picked['missing']} is not installed")
        if "layer" not in picked:
            return self._done(Status.BUILD_FAILED, picked.get("error") or pick.stderr.strip()[-300:])
        self.out["fault_layer"], self.out["candidates"] = picked["layer"], picked["candidates"]
        base = self._step("update_baseline", gate + ["update-baseline"])
        if base.timed_out:
            return self._done(Status.TIMEOUT, "update-baseline")
        if base.rc != 0 and not (self.folder / "baselines" / f"{self.spec.name}.msgpack.zst").exists():
            return self._done(Status.BASELINE_FAILED, _console_error(base))
        if base.rc != 0:  # a partial baseline (e.g. no ONNX Runtime entry): what it holds is still judged
            self.out["baseline_error"] = shorten(_console_error(base))
        clean = self._step("check", gate + ["check", "--full", "--json", "clean.json"])
        if clean.timed_out:
            return self._done(Status.TIMEOUT, "clean check")
        default = self._step("check_default", gate + ["check", "--json", "clean-default.json"])
        report = self._report("clean.json")
        if report is not None:
            self.out["layers"] = report["models"][0]["layers"] if report["models"] else None
            self.out["checked"] = provider_counts(report)
            self.out["clean"] = {"verdict": report["verdict"], "first_regression": report["first_regression"]}
        if report is None:
            return self._done(Status.CLEAN_ERROR, _console_error(clean))
        clean_status = (None if clean.rc == 0 else (Status.CLEAN_REGRESSED, gate_message(report)) if clean.rc == 1
                        else (Status.CLEAN_ERROR, gate_message(report)))
        if clean_status is None and default.rc != 0:
            clean_status = (Status.TIMEOUT, "clean check on the default path") if default.timed_out else \
                (Status.CLEAN_DEFAULT_FAILED, gate_message(self._report("clean-default.json")) or _console_error(default))
        # Run even after a failed clean check: whether each fault is seen first says what the table needs.
        weight = self._weight_fault(gate, picked["layer"])
        graph = self._graph_fault(gate)
        return self._done(*(clean_status or weight or graph or (Status.GATED,)))

    def _weight_fault(self, gate: list[str], layer: str) -> tuple[Status, str] | None:
        fault = self._step("fault_check", gate + ["check", "--json", "fault.json"], fault=layer)
        report = self._report("fault.json")
        first = report["first_regression"] if report else None
        self.out["fault"] = {"verdict": report["verdict"] if report else None, "first_regression": first}
        if fault.timed_out:
            return Status.TIMEOUT, "faulted check"
        if fault.rc == 0:
            return Status.FAULT_MISSED, f"`{layer}`.weight x1.001 passed"
        if fault.rc != 1 or first is None:
            return Status.FAULT_ERROR, gate_message(report) if report else _console_error(fault)
        if not belongs(first["layer"], layer):
            return Status.FAULT_ELSEWHERE, f"fault in `{layer}`, first regression: {gate_message(report)}"
        return None

    def _graph_fault(self, gate: list[str]) -> tuple[Status, str] | None:
        """One deep weight of the shipped graph rounded to float16 (``graph_fault``): named on the EP at the
        module the weight is, found by value."""
        truth = self.folder / "graph-truth.json"
        truth.unlink(missing_ok=True)
        step = self._step("graph_check", gate + ["check", "--config", "graph-fault.toml", "--json", "graph.json"],
                          extra={TRUTH_ENV: str(truth)})
        report, chosen = self._report("graph.json"), json.loads(truth.read_text()) if truth.exists() else {}
        first = report["first_regression"] if report else None
        self.out["graph_fault"] = {**chosen, "verdict": report["verdict"] if report else None, "first_regression": first}
        module = chosen.get("module")
        if step.timed_out:
            return Status.TIMEOUT, "graph-faulted check"
        if module is None or step.rc not in (0, 1) or (step.rc == 1 and first is None):
            return Status.GRAPH_ERROR, gate_message(report) if report else _console_error(step)
        if step.rc == 0:
            return Status.GRAPH_MISSED, f"`{chosen['initializer']}` ({module}) rounded to float16 passed"
        if first["provider"] != EP or not named_at(first, module):
            return Status.GRAPH_ELSEWHERE, f"graph fault in `{module}`, first regression: {gate_message(report)}"
        return None


def _console_error(step: Step) -> str:
    """The gate's own one-line message from a command without a JSON report."""
    lines = [line.strip() for line in (step.stdout + "\n" + step.stderr).splitlines() if line.strip()]
    for line in lines:
        if " not updated: " in line:
            return line.split(" not updated: ", 1)[1]
    errors = [line for line in lines if line.lower().startswith(("error", "traceback"))]
    text = errors[-1] if errors else (lines[-1] if lines else f"exit {step.rc}")
    return text.removeprefix("error: ")


def run_row(spec, python: str, folder: Path, limit: float) -> dict:
    return Row(spec, python, folder, limit).run()

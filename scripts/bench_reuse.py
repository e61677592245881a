"""Benchmark: `parity-gate check` with its stages reused under their keys against the whole-output recipe.

    PYTHONPATH=. python scripts/bench_reuse.py [--models resnet18 bert bert-sdpa resnet18-fp16 wide-2.4gb ...] [--repeat 3]
        [--json out.json]

Per model (random weights from configs, nothing downloaded; providers torch-cpu + CPUExecutionProvider;
`bert` with eager attention, `bert-sdpa` with transformers' default; `wide-2.4gb`: 36 x Linear(4096, 4096)
of examples/scale.py, 2.4 GB of float32 weights; `-fp16`, `-opt`, `-int8`: with
the float16, transformer-optimizer or int8 transform of examples/transforms.py, which the recipe
runs too: it checks what ships; `-declared`: the transform declares it reads nothing else
(`transform-inputs = []`), so its output is reused under its key), `update-baseline` first (not timed; it records the stage keys and
stores the export), then per repeat,
each side in a fresh process, each `check` paired with a recipe run beside it (the recipe first in
even repeats, the check first in odd ones): the recipe (export, one torch run, one ONNX Runtime run
from the file, np.allclose) and

- `warm`: `check`, the keys match and the store holds the export (a transform still runs: its time is
  printed apart, from the check's own stage timings);
- `cold`: `check`, the key matches, an empty cache folder (the graph is exported and stored);
- `changed`: `check` after a weight change (one weight scaled by 1 + 1e-3), starting from a copy of the
  store `update-baseline` of the unchanged model left, as a pull request's first run starts from the
  base branch's cache: the stored structure takes the new weights, not exported again; the float64
  reference runs;
- `code`: the same after a code change (a forward hook on the last module scales its output by
  1 + 1e-3: the op trace changes), from a copy of that store: exported afresh, the reference runs
  (beside the export, where `gate.pipeline.beside` lets it);
- `changed beside`, `code beside`, `changed serial`, `code serial`: the same with
  ``PARITY_GATE_BESIDE=on`` (the reference beside the export, in a forked child, whatever the CPUs) or
  ``off`` (after the export, in the gate's process); the path says where it ran;
- with `--floor`, each side's floor, timed in the same round: the stages its path must run, each
  alone, one after another in one fresh process, with nothing of the gate's own: imports; the model
  built; its weights read once (sha256, a tensor a CPU: whether they changed is known no other way);
  one float32 forward; after a code change, the export (as the recipe's); an ONNX Runtime session and run of the
  graph the cache holds, and of a copy that also outputs every value the gate marks (the layer map
  stored with it; made before the round, not timed; opened without weight prepacking, as the gate does);
  after a weight change, the new weights written once; after any change, the float64 forward (the model
  converted to float64 first). The floor's
  wall is the process's; each part's seconds go to the JSON (`floor_parts`). It is the sum of what
  the path cannot skip, not a bound on a gate that overlaps stages on two CPUs. What it writes, and
  each change side's copy of the store, are removed after its round (a 2.4 GB model's would fill
  tens of GB).

Wall time and peak memory of the whole process tree (the gate, its reference beside the export and its
ONNX Runtime worker), as scripts/measure.py takes it (``measure.measured``). Reported: per side the median
and range of wall and peak, the median and range of the per-pair ratio to the recipe, and the path
each run took (each stage's state).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from measure import RECIPE_RUN, host, measured, pairs, path_taken, stage_seconds  # noqa: E402 - how every benchmark measures

from gate.env import BESIDE as BESIDE_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TWINS = {"beside": "on", "serial": "off"}  # PARITY_GATE_BESIDE of a change side's twin
SIDES = ("warm", "cold", "changed", *(f"changed {t}" for t in TWINS), "code",
         *(f"code {t}" for t in TWINS))
CHANGES = {"changed": "BENCH_CHANGE", "code": "BENCH_CODE_CHANGE"}

MODELS = textwrap.dedent("""
    import os
    import torch

    def _changed(model):
        if os.environ.get("BENCH_CHANGE"):  # a model change: one weight moved by 1e-3
            with torch.no_grad():
                next(model.parameters()).mul_(1 + 1e-3)
        if os.environ.get("BENCH_CODE_CHANGE"):  # a code change: one more operation in the last module's forward
            list(model.modules())[-1].register_forward_hook(lambda _m, _i, out: out * (1 + 1e-3))
        return model

    def resnet18():
        import torchvision
        return _changed(torchvision.models.resnet18(weights=None))

    def bert():
        from transformers import BertConfig, BertModel
        return _changed(BertModel(BertConfig(attn_implementation="eager")))

    def bert_sdpa():  # transformers' default attention
        from transformers import BertConfig, BertModel
        return _changed(BertModel(BertConfig()))

    def gpt2(seq):
        def build():
            from transformers import GPT2Config, GPT2Model
            return _changed(GPT2Model(GPT2Config(n_layer=12, n_positions=max(seq, 1024), use_cache=False,
                                                 attn_implementation="eager")))
        return build

    gpt2x512, gpt2x2048 = gpt2(512), gpt2(2048)

    def wide_2_4gb():  # 36 x Linear(4096, 4096) + GELU: 2.4 GB of float32 weights
        from examples.scale import wide_2_4gb as wide
        return _changed(wide())
""")

RESNET_IN = '[{ name = "x", shape = [1, 3, 224, 224], dtype = "float32" }]'
BERT_IN = '[{ name = "input_ids", shape = [1, 128], dtype = "int64", high = 30000 }]'
# model -> (factory, inputs, transform in examples/transforms.py)
MODELS_RUN = {
    "resnet18": ("resnet18", RESNET_IN, None),
    "bert": ("bert", BERT_IN, None),
    "bert-sdpa": ("bert_sdpa", BERT_IN, None),
    "resnet18-fp16": ("resnet18", RESNET_IN, "float16"),
    "resnet18-int8": ("resnet18", RESNET_IN, "int8_dynamic"),
    "bert-opt": ("bert_sdpa", BERT_IN, "bert_optimized"),
    "bert-fp16": ("bert_sdpa", BERT_IN, "float16"),
    "bert-opt-declared": ("bert_sdpa", BERT_IN, "bert_optimized"),  # transform-inputs = []: its output is keyed
    "gpt2x512": ("gpt2x512", '[{ name = "input_ids", shape = [1, 512], dtype = "int64", high = 50257 }]', None),
    "gpt2x2048": ("gpt2x2048", '[{ name = "input_ids", shape = [1, 2048], dtype = "int64", high = 50257 }]', None),
    "wide-2.4gb": ("wide_2_4gb", '[{ name = "x", shape = [2, 4096], dtype = "float32" }]', None),
}
# The model and the inputs the gate generates (gate.model.inputs), in a fresh process.
BUILT = textwrap.dedent("""
    import sys, numpy as np, torch, onnxruntime as ort
    sys.path.insert(0, ".")
    import bench_models
    from gate.config import load_config
    from gate.model.inputs import generate
    spec = load_config(__import__("pathlib").Path("parity-gate.toml")).models[0]
    torch.manual_seed(spec.seed)
    model = getattr(bench_models, sys.argv[1])().eval()
    x = torch.from_numpy(generate(spec.inputs, spec.seed)[0])
""")
RECIPE = BUILT + RECIPE_RUN
# What ships, when a transform makes it: the recipe checks the transformed graph's output.
RECIPE_SHIPS = BUILT + textwrap.dedent("""
    import onnx
    from examples import transforms
    with torch.no_grad():
        torch.onnx.export(model, (x,), "recipe.onnx", dynamo=True, external_data=True)
        out = model(x)
        expected = (out if isinstance(out, torch.Tensor) else out[0]).numpy()
    shipped = getattr(transforms, sys.argv[2])(onnx.load("recipe.onnx"))
    __import__("pathlib").Path("shipped.onnx.data").unlink(missing_ok=True)  # the last run's
    onnx.save(shipped, "shipped.onnx", save_as_external_data=True, location="shipped.onnx.data")
    sess = ort.InferenceSession("shipped.onnx", providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    print("allclose", np.allclose(expected, got, rtol=1e-2, atol=1e-2))
""")
# A path's floor (``--floor``): argv model factory, path (none, weight, code); the seconds of each part.
FLOOR = textwrap.dedent("""
    import time
    T0 = time.perf_counter()
    import hashlib, json, sys, numpy as np, torch, onnxruntime as ort
    sys.path.insert(0, ".")
    import bench_models
    from gate.config import load_config
    from gate.model.inputs import generate
    parts = {"imports": time.perf_counter() - T0}
    path = sys.argv[2]

    def part(name, fn):
        t = time.perf_counter()
        out = fn()
        parts[name] = time.perf_counter() - t
        return out

    def build():
        spec = load_config(__import__("pathlib").Path("parity-gate.toml")).models[0]
        torch.manual_seed(spec.seed)
        x = torch.from_numpy(generate(spec.inputs, spec.seed)[0])
        return getattr(bench_models, sys.argv[1])().eval(), x

    def read_weights():  # a tensor a CPU, as the gate hashes them
        from concurrent.futures import ThreadPoolExecutor
        from gate.env import usable_cpus
        one = lambda t: hashlib.sha256(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()).digest()
        with ThreadPoolExecutor(usable_cpus()) as pool:
            return hashlib.sha256(b"".join(pool.map(one, [t for _, t in sorted(model.state_dict().items())])))

    def ort_runs():
        for graph in ("floor.onnx", "floor-marked.onnx"):
            so = ort.SessionOptions()
            if graph == "floor-marked.onnx":  # as the gate opens a graph it runs once: no weight prepacking
                so.add_session_config_entry("session.disable_prepacking", "1")
            sess = ort.InferenceSession(graph, so, providers=["CPUExecutionProvider"])
            sess.run(None, {sess.get_inputs()[0].name: x.numpy()})

    model, x = part("build", build)
    part("weights read", read_weights)
    with torch.inference_mode():
        part("float32 forward", lambda: model(x))
    if path == "code":
        with torch.no_grad():
            part("export", lambda: torch.onnx.export(model, (x,), "floor-export.onnx", dynamo=True,
                                                     external_data=True))
    part("ONNX Runtime", ort_runs)
    if path == "weight":
        part("weights written", lambda: torch.save(model.state_dict(), "floor-weights.pt"))
    if path != "none":
        with torch.inference_mode():
            part("float64 forward", lambda: model.double()(x.double() if x.is_floating_point() else x))
    for written in ("floor-export.onnx", "floor-export.onnx.data", "floor-weights.pt"):
        __import__("pathlib").Path(written).unlink(missing_ok=True)
    print("FLOOR", json.dumps(parts))
""")
FLOOR_PATHS = {"warm": "none", "changed": "weight", "code": "code"}  # a side's path, by its first word


def project(folder: Path, model: str) -> Path:
    factory, inputs, transform = MODELS_RUN[model]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_models.py").write_text(MODELS)
    (folder / "recipe.py").write_text(RECIPE_SHIPS if transform else RECIPE)
    (folder / "floor.py").write_text(FLOOR)
    (folder / "parity-gate.toml").write_text(
        f'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
        f'[[models]]\nname = "{model}"\nfactory = "bench_models:{factory}"\ninputs = {inputs}\n'
        + (f'transform = "examples.transforms:{transform}"\n' if transform else "")
        + ("transform-inputs = []\n" if model.endswith("-declared") else ""))
    return folder


def recipe_args(model: str) -> list[str]:
    factory, _, transform = MODELS_RUN[model]
    return [factory] + ([transform] if transform else [])


def floor_graphs(folder: Path, cache: Path) -> None:
    """Into ``folder``: the graph `update-baseline` stored in ``cache`` and a copy that also outputs
    every value of the layer map stored with it (the values the gate's worker marks)."""
    import onnx

    from gate.core.status import Stage
    from gate.export.record import Graph
    from gate.export.saved import DATA, MODEL
    from gate.runners.ort_session import mark_outputs
    from gate.store import Store

    store = Store(cache)
    (key,) = [p.name for p in (cache / Stage.EXPORT.value).iterdir() if not p.name.startswith(".")]
    entry = store.get(Stage.EXPORT, key, Graph.proves).entry  # the gate's own checked readers
    if entry is None:
        raise SystemExit(f"the stored export {key[:12]} does not read back")
    Graph.from_entry(entry).unproven(entry)  # Corrupt where its files are not what the entry records
    sites = entry.payload["onnx_map"]
    values = list(dict.fromkeys(s["value"] for s in sites.values() if s["kind"] == "value"))
    model = entry.path(MODEL)
    proto = onnx.load(str(model), load_external_data=False)
    if DATA in entry.files:  # the copies name it by the same relative location; ONNX
        os.link(entry.path(DATA), folder / DATA)  # Runtime refuses a symlink out of the folder
    shutil.copyfile(model, folder / "floor.onnx")
    onnx.save(mark_outputs(proto, values), str(folder / "floor-marked.onnx"))


def gate(code: Path) -> list[str]:
    """The command line of the checkout at ``code``, as its console script starts it."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(code)!r}); from gate.cli.app import main; "
            "sys.argv[0] = 'parity-gate'; main()"]


def run_model(model: str, repeat: int, work: Path, floor: bool,
              only: tuple[str, ...] = ("warm", "cold", "changed", "code")) -> dict:
    here = project(work / "reuse", model)
    cache = work / "cache"
    env = {"PARITY_GATE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    measured(gate(ROOT) + ["update-baseline"], here, env)
    if floor:
        floor_graphs(here, cache)
    sides: dict[str, list[dict]] = {k: [] for k in ("recipe", *SIDES)}

    def paired(side: str, folder: Path, code: Path, extra: dict, i: int) -> None:
        runs = {}
        for which in pairs(i + 1, ("recipe", side))[i]:
            if which == "recipe":
                runs[which] = measured([sys.executable, "recipe.py", *recipe_args(model)], folder,
                                       {"PYTHONPATH": f"{code}{os.pathsep}{ROOT}"})
                if "allclose" not in runs[which].proc.stdout:
                    raise SystemExit(f"the recipe failed for {model}:\n{runs[which].proc.stderr[-3000:]}")
            else:
                (folder / "report.json").unlink(missing_ok=True)
                runs[which] = measured(gate(code) + ["check", "--json", "report.json"], folder,
                                       {"PYTHONPATH": str(code), **extra})
        r, c = runs["recipe"], runs[side]
        sides["recipe"].append({"wall": r.wall_s, "peak": r.peak_gb})
        report = json.loads((folder / "report.json").read_text())
        row = {"wall": c.wall_s, "peak": c.peak_gb, "recipe_wall": r.wall_s, "recipe_peak": r.peak_gb,
               "path": path_taken(report, c.proc.stderr),
               "transform_s": stage_seconds(c.proc.stderr + c.proc.stdout)["transform"]}
        if floor and side.split()[0] in FLOOR_PATHS:  # the path's floor, same round
            changed = {k: v for k, v in extra.items() if k in CHANGES.values()}
            f = measured([sys.executable, "floor.py", recipe_args(model)[0], FLOOR_PATHS[side.split()[0]]],
                         folder, {"PYTHONPATH": str(code), **changed}, ok=(0,))
            said = [line for line in f.proc.stdout.splitlines() if line.startswith("FLOOR ")]
            if not said:
                raise SystemExit(f"the floor failed for {model}:\n{f.proc.stderr[-3000:]}")
            row.update(floor_wall=f.wall_s, floor_peak=f.peak_gb, floor_parts=json.loads(said[-1][6:]))
        sides[side].append(row)

    for i in range(repeat):
        if "warm" in only:
            paired("warm", here, ROOT, env, i)
        if "cold" in only:
            paired("cold", here, ROOT, {**env, "PARITY_GATE_CACHE_DIR": str(work / f"cold-{i}")}, i)
        for side in [s for s in SIDES if s.split()[0] in CHANGES]:
            if side in only:  # from the base's store, as a pull request's first run (copied: not timed)
                base = work / f"{side}-{i}".replace(" ", "-")
                shutil.copytree(cache, base)
                change, _, twin = side.partition(" ")
                mode = {BESIDE_ENV: TWINS[twin]} if twin else {}
                extra = {"PARITY_GATE_CACHE_DIR": str(base), CHANGES[change]: "1", **mode}
                paired(side, here, ROOT, {**env, **extra}, i)
                shutil.rmtree(base, ignore_errors=True)
    return {k: v for k, v in sides.items() if v}


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def table(model: str, sides: dict) -> list[str]:
    """One row per side: its runs and the recipe runs paired with them (never the recipe runs of the
    other sides: each side's recipe column is the median of its own pairs)."""
    out = []
    for side in SIDES:
        runs = sides.get(side)
        if not runs:
            continue
        wall_x = [r["wall"] / r["recipe_wall"] for r in runs]
        peak_x = [r["peak"] / r["recipe_peak"] for r in runs]
        said = "; ".join(sorted({r["path"] for r in runs}))
        transform = [r["transform_s"] for r in runs if r.get("transform_s")]
        floors = [r for r in runs if "floor_wall" in r]
        floor = (f"{_spread([r['floor_wall'] for r in floors], '.1f')} | "
                 f"{_spread([r['wall'] / r['floor_wall'] for r in floors], '.2f')}") if floors else "— | —"
        out.append(f"| {model} | check {side} | {_spread([r['recipe_wall'] for r in runs], '.1f')} | "
                   f"{_spread([r['wall'] for r in runs], '.1f')} | "
                   f"{_spread(wall_x, '.2f')} | {_spread([r['recipe_peak'] for r in runs], '.2f')} | "
                   f"{_spread([r['peak'] for r in runs], '.2f')} | {_spread(peak_x, '.2f')} | {floor} | "
                   f"{_spread(transform, '.1f') if transform else '—'} | {said} |")
    return out


def floor_parts(model: str, sides: dict) -> list[str]:
    """Per side with floors, the median seconds of each part of its path's floor."""
    out = []
    for side in SIDES:
        floors = [r["floor_parts"] for r in sides.get(side, []) if "floor_parts" in r]
        if floors:
            names = list(floors[0])
            parts = ", ".join(f"{n} {statistics.median(f[n] for f in floors):.2f}" for n in names)
            out.append(f"| {model} | {FLOOR_PATHS[side.split()[0]]} | {parts} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["resnet18", "bert-sdpa"], choices=sorted(MODELS_RUN))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--floor", action="store_true", help="also each side's floor: what its path cannot skip")
    ap.add_argument("--sides", nargs="+", default=["warm", "cold", "changed", "code"],
                    choices=SIDES,
                    help="which of the check's sides to time (default: warm, cold, changed, code); "
                    "`beside` and `serial`: with PARITY_GATE_BESIDE=on and off")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    measure.own_cache()  # never the user's store
    print(host("torch", "onnx", "onnxruntime", "transformers"), flush=True)
    results = {}
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="bench-reuse-") as tmp:
            results[model] = run_model(model, args.repeat, Path(tmp), args.floor,
                                       tuple(args.sides))
        print("\n".join(table(model, results[model])), flush=True)
    print(f"\n{host()}; median (range) of {args.repeat}; {measure.peak_said()}, GB")
    print("| model | run | recipe wall s | wall s | wall x recipe | recipe peak GB | peak GB | peak x recipe "
          "| floor s | wall x floor | transform s | path |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for model, sides in results.items():
        print("\n".join(table(model, sides)))
    if args.floor:
        print("\n| model | path | floor: median seconds of each part |\n| --- | --- | --- |")
        for model, sides in results.items():
            print("\n".join(floor_parts(model, sides)))
    if args.json:
        args.json.write_text(json.dumps({"host": host(), "results": results}, indent=1))


if __name__ == "__main__":
    main()

"""The architecture zoo: public architectures gated end to end through the real CLI, one table row each.

    PYTHONPATH=. python scripts/bench_zoo.py [--models resnet18,llama,'*rcnn*'] [--only torchvision/detection,timm]
        [--json zoo.json [--update]] [--markdown docs/models.md] [--timeout 480] [--python PY] [--keep DIR] [--list]
    PYTHONPATH=. python scripts/bench_zoo.py --from zoo.json --markdown docs/models.md   # render only

Rows (``scripts/zoo/``): torchvision classification, segmentation, detection, video and optical flow;
transformers encoders, decoder-only LLM families, encoder-decoders, vision, audio and multimodal
models; timm when it is installed. Random weights, small inputs, nothing downloaded.

Each row is a project of its own in a temporary folder (a config and the factory module it names),
run by ``--python`` (default: this interpreter): ``update-baseline``; a clean ``check --full`` and a
clean ``check`` on the default path (both must pass); a ``check`` whose factory scales one weight deep
in the model by 1.001 (``zoo/pick.py`` says which; the first regression must be a layer of that
module); and a ``check`` whose transform rounds one deep weight of the shipped graph to float16
(``zoo/graph_fault.py``; the first regression must be on the CPU EP, at the module that weight is). Every command is its own process tree, timed,
its peak memory taken as scripts/measure.py does (the gate's ONNX Runtime worker included), and ended
with the row when the row runs past ``--timeout`` seconds, so one model cannot take the table down. A
row that does not pass end to end gets its status and the gate's own message, shortened.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import cpu_model, own_cache  # noqa: E402
from zoo import specs, table  # noqa: E402
from zoo.row import run_row  # noqa: E402

VERSIONS = """import importlib, json, platform
out = {"python": platform.python_version()}
for name in ("torch", "torchvision", "transformers", "timm", "onnx", "onnxruntime", "onnxscript"):
    try:
        out[name] = importlib.import_module(name).__version__
    except ImportError:
        out[name] = "not installed"
print(json.dumps(out))
"""


def select(all_specs: dict, models: str | None, only: str | None) -> list:
    chosen = list(all_specs.values())
    if models:
        patterns = [p for p in models.split(",") if p]
        unknown = [p for p in patterns if not any(fnmatch.fnmatch(n, p) for n in all_specs)]
        if unknown:
            raise SystemExit(f"--models: no row matches {', '.join(unknown)} (--list shows the rows)")
        chosen = [s for s in chosen if any(fnmatch.fnmatch(s.name, p) for p in patterns)]
    if only:
        families = [f for f in only.split(",") if f]
        chosen = [s for s in chosen if any(s.family == f or s.family.startswith(f.rstrip("/") + "/") for f in families)]
    return chosen


def machine() -> str:
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()
    return f"{cpu_model()}, {os.cpu_count()} CPUs, {mem:.0f} GiB; load average at the start {load[0]:.2f}"


def line(row: dict) -> str:
    step, default = row["steps"].get("check") or {}, row["steps"].get("check_default") or {}
    first = (row.get("fault") or {}).get("first_regression") or {}
    graph = row.get("graph_fault") or {}
    where = (graph.get("first_regression") or {})
    return (f"{row['name']:24} {row['status']:16} check --full {step.get('wall_s', 0):6.1f} s "
            f"{step.get('peak_gb', 0):5.2f} GB, default {default.get('wall_s', 0):6.1f} s  row {row['total_s']:6.1f} s"
            f"  weight {row.get('fault_layer', '-')} -> {first.get('layer', '-')}"
            f"  graph {graph.get('module', '-')} -> {where.get('layer', '-')} ({where.get('provider', '-')})"
            + (f"  | {row['reason']}" if row.get("reason") else ""))


def merge(base: dict, fresh: dict) -> dict:
    """``base`` with ``fresh``'s rows in place of its rows of the same names (new ones at the end), and
    the rerun recorded; refused when the versions differ, since the table states one set."""
    if base["versions"] != fresh["versions"]:
        raise SystemExit(f"--update: the versions differ from the table's ({base['versions']}); rerun every row")
    by_name = {r["name"]: r for r in fresh["rows"]}
    rows = [by_name.pop(r["name"], r) for r in base["rows"]] + list(by_name.values())
    reruns = [*base.get("reruns", []), {"command": fresh["command"], "date": fresh["date"], "commit": fresh["commit"],
                                        "rows": [r["name"] for r in fresh["rows"]]}]
    return {**base, "rows": rows, "reruns": reruns}


def run(chosen: list, args: argparse.Namespace, command: str) -> dict:
    versions = json.loads(subprocess.run([args.python, "-c", VERSIONS], capture_output=True, text=True,
                                         check=True).stdout)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    data = {"schema": "parity-gate/zoo", "version": 1, "command": command, "commit": commit, "machine": machine(),
            "date": datetime.date.today().isoformat(), "versions": versions, "wall_min": 0.0, "rows": []}
    print(f"{len(chosen)} rows on {data['machine']}; {json.dumps(versions)}", flush=True)
    base = json.loads(args.json.read_text()) if args.update else None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="zoo-") as tmp:
        root = args.keep or Path(tmp)
        for spec in chosen:
            row = run_row(spec, args.python, root / spec.name, args.timeout)
            data["rows"].append(row)
            data["wall_min"] = (time.perf_counter() - start) / 60
            print(line(row), flush=True)
            if args.json:  # after every row: a run cut short keeps what it measured
                args.json.write_text(json.dumps(merge(base, data) if base else data, indent=1))
    gated, total, rate = table.summary(data["rows"])
    print(f"\n{gated} of {total} rows gated end to end ({rate:.0f}%) in {data['wall_min']:.1f} min")
    return merge(base, data) if base else data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma-separated row names or globs")
    ap.add_argument("--only", help="comma-separated families or family prefixes (transformers, torchvision/video)")
    ap.add_argument("--json", type=Path, help="write every row's measurements here")
    ap.add_argument("--markdown", type=Path, help="rewrite the table block of this file (docs/models.md)")
    ap.add_argument("--block", default="table", help="which block of --markdown: `table` (every row) or another "
                    "name, for a partial run kept apart (markers <!-- zoo-NAME:begin/end -->)")
    ap.add_argument("--from", dest="source", type=Path, help="render --markdown from an earlier --json, no runs")
    ap.add_argument("--timeout", type=float, default=480.0, help="seconds per row, all its commands together")
    ap.add_argument("--python", default=sys.executable, help="the interpreter the gate runs under")
    ap.add_argument("--keep", type=Path, help="keep each row's project under DIR/<row>")
    ap.add_argument("--update", action="store_true",
                    help="rerun the selected rows and replace them in the existing --json file")
    ap.add_argument("--list", action="store_true", help="print the rows and exit")
    args = ap.parse_args(argv)
    own_cache()  # never the user's store
    if args.update and not (args.json and args.json.exists()):
        raise SystemExit("--update needs --json naming an existing table")
    if args.source:
        data = json.loads(args.source.read_text())
    else:
        chosen = select(specs(), args.models, args.only)
        if args.list:
            for s in chosen:
                print(f"{s.name:24} {s.family:32} {s.note}")
            return 0
        data = run(chosen, args, "python scripts/bench_zoo.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    if args.markdown:
        table.write(args.markdown, data, args.block)
        print(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

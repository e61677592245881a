"""Write every workflow ``parity-gate init`` can write into one folder, for actionlint and zizmor.

Each flow with and without ``--require-approval`` and with the models' own requirements, and the flows that
can be sharded with ``--shards 4``, one file per workflow, named ``init-<flow>[-approval][-shards]-<file>.yml``; plus ``actionlint.yaml`` naming the GPU runner's
labels. Usage: python -m tests.support.action_init_workflows OUTDIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from gate.scaffold.workflows import FLOWS, SHARDED_FLOWS, Flow, workflows


def variants() -> dict[str, str]:
    """File name -> workflow text, for every flow and option init offers."""
    out = {}
    for kind in FLOWS:
        for approval in (False, True):
            for shards in (0, 4) if kind in SHARDED_FLOWS else (0,):
                flow = Flow(kind, pip_args="torchvision -r requirements.txt", require_approval=approval, shards=shards)
                for path, text in workflows(flow).items():
                    name = f"init-{kind}{'-approval' if approval else ''}{'-shards' if shards else ''}-{Path(path).name}"
                    out[name] = text
    return out


def write(where: Path) -> list[Path]:
    where.mkdir(parents=True, exist_ok=True)
    labels = sorted({label.strip() for label in Flow().gpu_runner.split(",")} - {"self-hosted", "linux", "x64"})
    (where / "actionlint.yaml").write_text("self-hosted-runner:\n  labels: [" + ", ".join(labels) + "]\n")
    files = []
    for name, text in variants().items():
        (where / name).write_text(text, encoding="utf-8")
        files.append(where / name)
    return files


def main() -> None:
    for path in write(Path(sys.argv[1])):
        print(path)


if __name__ == "__main__":
    main()

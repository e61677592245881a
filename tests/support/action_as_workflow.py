"""Print action.yml's composite steps as a workflow (JSON, which is YAML) for actionlint.

actionlint checks workflows; it reads action.yml only for the inputs a `uses: ./` passes.
Wrapping the steps in a workflow_call job with the same inputs lets it check every
expression, step id, step output reference and context the composite uses.
Usage: python -m tests.support.action_as_workflow [action.yml] | actionlint -stdin-filename action.yml -
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml


def as_workflow(action: dict) -> dict:
    inputs = {name: {"type": "string", "required": False, "description": spec.get("description", "")}
              for name, spec in action.get("inputs", {}).items()}
    outputs = {name: spec["value"] for name, spec in action.get("outputs", {}).items()}
    return {
        "name": f"{action.get('name', 'action')} (composite steps, linted as a workflow)",
        "on": {"workflow_call": {"inputs": inputs}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "outputs": outputs, "steps": action["runs"]["steps"]}},
    }


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "action.yml")
    json.dump(as_workflow(yaml.safe_load(path.read_text(encoding="utf-8"))), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

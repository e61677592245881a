"""The GitHub workflows ``init`` writes, one per flow (docs/action.md explains each):

- ``single``: one job on a GitHub-hosted runner checks every model and comments;
- ``gpu``: export once on a CPU runner, collect there and on a self-hosted GPU runner (never for a
  fork's pull request), one report and one comment;
- ``fork``: the check runs with a read-only token, a second workflow (``workflow_run``) comments
  without checking out the pull request's code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ACTION = "parity-gate/parity-gate@v1"
FLOWS = ("single", "gpu", "fork")
CHECKOUT = "actions/checkout@v5"
HEADER = ("# Written by `parity-gate init`; what each input does: "
          "https://github.com/parity-gate/parity-gate/blob/main/docs/action.md\n")
CONCURRENCY = """concurrency:  # a newer push cancels the older run, whose comment would be stale anyway
  group: parity-gate-${{ github.event.pull_request.number || github.ref }}
  cancel-in-progress: true
"""


@dataclass(frozen=True)
class Flow:
    kind: str = "single"
    action: str = ACTION
    pip_args: str = ""  # the models' own requirements (torchvision, -r requirements.txt)
    require_approval: bool = False
    gpu_runner: str = "self-hosted, linux, x64, gpu"
    gpu_providers: str = "CUDAExecutionProvider"


def _with(flow: Flow, *pairs: tuple[str, str], model: bool = False, gate: bool = False) -> str:
    """The step's ``with:``: ``model`` for jobs that import the model (they install its requirements),
    ``gate`` for the job whose exit status is the verdict (it enforces baseline approval)."""
    items = [p for p in pairs if p[1]]
    if model and flow.pip_args:
        items.append(("extra-pip-args", json.dumps(flow.pip_args)))
    if gate and flow.require_approval:
        items.append(("baseline-changes", "require-approval"))
    if not items:
        return ""
    return "        with:\n" + "".join(f"          {k}: {v}\n" for k, v in items)


def _trigger(flow: Flow) -> str:
    if not flow.require_approval:
        return "on:\n  pull_request:\n"
    # A label or an approving review must run the gate again.
    return ("on:\n  pull_request:\n    types: [opened, synchronize, reopened, labeled, unlabeled]\n"
            "  pull_request_review:\n    types: [submitted, dismissed]\n")


def single(flow: Flow) -> str:
    return (HEADER + "name: parity-gate\n" + _trigger(flow) +
            "permissions:\n  contents: read\n  pull-requests: write\n" + CONCURRENCY +
            "jobs:\n  parity-gate:\n    runs-on: ubuntu-latest\n    timeout-minutes: 60\n    steps:\n"
            f"      - uses: {CHECKOUT}\n      - uses: {flow.action}\n" + _with(flow, model=True, gate=True))


def gpu(flow: Flow) -> str:
    labels = ", ".join(label.strip() for label in flow.gpu_runner.split(",") if label.strip())
    return (HEADER + "name: parity-gate\n" + _trigger(flow) + "permissions:\n  contents: read\n" + CONCURRENCY +
            "jobs:\n"
            "  export:  # the models, exported once; the float64 reference and torch providers run here\n"
            "    runs-on: ubuntu-latest\n    timeout-minutes: 60\n    steps:\n"
            f"      - uses: {CHECKOUT}\n      - uses: {flow.action}\n" + _with(flow, ("mode", "export"), model=True) +
            "  cpu:\n    needs: export\n    runs-on: ubuntu-latest\n    timeout-minutes: 60\n    steps:\n"
            f"      - uses: {CHECKOUT}\n      - uses: {flow.action}\n"
            + _with(flow, ("mode", "collect"), ("providers", "CPUExecutionProvider")) +
            "  gpu:\n    needs: export\n"
            "    # Self-hosted runners never run a fork's code: its GPU providers are reported as not checked.\n"
            "    if: github.event.pull_request.head.repo.full_name == github.repository\n"
            f"    runs-on: [{labels}]\n    timeout-minutes: 60\n    steps:\n"
            f"      - uses: {CHECKOUT}\n      - uses: {flow.action}\n"
            + _with(flow, ("mode", "collect"), ("providers", flow.gpu_providers), ("onnxruntime", "onnxruntime-gpu")) +
            "  report:\n    needs: [export, cpu, gpu]\n"
            "    if: ${{ !cancelled() && needs.export.result == 'success' }}  # also when the GPU job was skipped\n"
            "    runs-on: ubuntu-latest\n    timeout-minutes: 30\n"
            "    permissions:\n      contents: read\n      pull-requests: write\n    steps:\n"
            f"      - uses: {CHECKOUT}\n      - uses: {flow.action}\n" + _with(flow, ("mode", "report"), gate=True))


def fork(flow: Flow) -> tuple[str, str]:
    """The pull_request workflow (no write permission) and the workflow_run workflow that comments."""
    check = (HEADER + "name: parity-gate\n" + _trigger(flow) + "permissions:\n  contents: read\n" + CONCURRENCY +
             "jobs:\n  parity-gate:\n    runs-on: ubuntu-latest\n    timeout-minutes: 60\n    steps:\n"
             f"      - uses: {CHECKOUT}\n      - uses: {flow.action}\n        id: gate\n"
             + _with(flow, ("comment", "never"), model=True, gate=True) +
             "      - name: Keep the report and the PR number for the comment workflow\n"
             "        if: ${{ !cancelled() && steps.gate.outputs.report-json != '' }}\n"
             "        env:\n          REPORT: ${{ steps.gate.outputs.report-json }}\n"
             "          PR_NUMBER: ${{ github.event.pull_request.number }}\n"
             "        run: |\n          mkdir -p parity-gate-pr\n          cp \"$REPORT\" parity-gate-pr/report.json\n"
             "          echo \"$PR_NUMBER\" > parity-gate-pr/number\n"
             "      - uses: actions/upload-artifact@v6\n"
             "        if: ${{ !cancelled() && steps.gate.outputs.report-json != '' }}\n"
             "        with:\n          name: parity-gate-pr\n          path: parity-gate-pr/\n")
    comment = (HEADER + "name: parity-gate comment\non:\n  workflow_run:\n    workflows: [parity-gate]\n"
               "    types: [completed]\n"
               "permissions:\n  actions: read  # download the other run's artifact\n  pull-requests: write\n"
               "jobs:\n  comment:\n    if: github.event.workflow_run.event == 'pull_request'\n"
               "    runs-on: ubuntu-latest\n    timeout-minutes: 15\n    steps:\n"
               "      # No actions/checkout: nothing from the pull request runs here; the report is read as data.\n"
               "      - uses: actions/download-artifact@v7\n        with:\n          name: parity-gate-pr\n"
               "          path: parity-gate-pr\n          run-id: ${{ github.event.workflow_run.id }}\n"
               "          github-token: ${{ github.token }}\n"
               "      - id: pr\n        run: echo \"number=$(tr -cd '0-9' < parity-gate-pr/number)\" >> \"$GITHUB_OUTPUT\"\n"
               f"      - uses: {flow.action}\n        with:\n          mode: comment\n"
               "          report-json: parity-gate-pr/report.json\n"
               "          pr-number: ${{ steps.pr.outputs.number }}\n"
               "          fail-on: never  # the pull_request workflow's status is the gate\n")
    return check, comment


def workflows(flow: Flow) -> dict[str, str]:
    """Workflow files by path, relative to the repository root."""
    if flow.kind == "single":
        return {".github/workflows/parity-gate.yml": single(flow)}
    if flow.kind == "gpu":
        return {".github/workflows/parity-gate.yml": gpu(flow)}
    check, comment = fork(flow)
    return {".github/workflows/parity-gate.yml": check, ".github/workflows/parity-gate-comment.yml": comment}

"""The GitHub workflows ``init`` writes, one per flow (docs/action.md explains each): ``single`` and
``fork`` check in ``pull_request`` and a ``workflow_run`` workflow judges and comments; ``gpu`` exports
on a CPU runner, collects there and on a self-hosted GPU runner, from ``pull_request_target``. With
``shards`` the check is a matrix of legs (``--shard K/N``) merged into one comment and status;
``GPU_BASELINES`` (the ``gpu`` flow, ``workflow_dispatch``) records the GPU baseline entries and opens
a pull request from a hosted job.

The jobs that run the pull request's code hold a read-only token and hand their report on as an
artifact; the job that judges and comments holds ``pull-requests: write``, runs as the default branch
has it, never checks out or runs the pull request's code, and installs parity-gate's core only (mode
``comment``). The write token never reaches the GPU machine, and a fork's code in the ``gpu`` flow
runs only once a maintainer has approved the run (a protected environment), at its head commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ACTION = "parity-gate/parity-gate@v1"
FLOWS = ("single", "gpu", "fork")
SHARDED_FLOWS = ("single", "fork")  # the gpu flow exports once and collects per runner: no sharded check
# Pinned by commit (a tag can be moved); the comment names the release.
CHECKOUT = "actions/checkout@fbc6f3992d24b796d5a048ff273f7fcc4a7b6c09 # v5.1.0"
UPLOAD = "actions/upload-artifact@b7c566a772e6b6bfb58ed0dc250532a479d7789f # v6.0.0"
DOWNLOAD = "actions/download-artifact@37930b1c2abaa49bbe596cd826c3c89aef350131 # v7.0.0"
GPU_BASELINES = ".github/workflows/parity-gate-gpu-baselines.yml"
GPU_BASELINES_NAME = "parity-gate GPU baselines"
GPU_BASELINES_ARTIFACT = "parity-gate-gpu-baselines"
# The one click (or command) that records the GPU providers' entries: init and check say it.
RUN_GPU_BASELINES = (f"Actions → {GPU_BASELINES_NAME} → Run workflow, or `gh workflow run "
                     f"{GPU_BASELINES.rsplit('/', 1)[1]}`")
BASELINES = ".github/workflows/parity-gate-baselines.yml"  # with shards: the re-recording as a matrix
BASELINES_NAME = "parity-gate baselines"
BASELINES_ARTIFACT = "parity-gate-baselines"
FORK_ENVIRONMENT = "parity-gate-fork"  # required reviewers: who may run a fork's code (docs/action.md)
REPORT = "parity-gate-report"  # the artifact the gate job uploads and the verdict job judges
PR_ARTIFACT = "parity-gate-pr"  # the fork flow's hand-over to its comment workflow: the report and the PR number
HEADER = ("# Written by `parity-gate init`; what each input does: "
          "https://github.com/parity-gate/parity-gate/blob/main/docs/action.md\n")
CONCURRENCY = """concurrency:  # a newer push cancels the older run, whose comment would be stale anyway
  group: parity-gate-${{ github.event.pull_request.number || github.ref }}
  cancel-in-progress: true
"""
SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"
HEAD_SHA = "${{ github.event.pull_request.head.sha }}"
READ_ONLY = "    permissions:\n      contents: read  # check out the pull request; nothing else\n"
READ_DEFAULT = READ_ONLY.replace("check out the pull request", "check out the default branch")


@dataclass(frozen=True)
class Flow:
    kind: str = "single"
    action: str = ACTION
    pip_args: str = ""  # the models' own requirements (torchvision, -r requirements.txt)
    require_approval: bool = False
    gpu_runner: str = "self-hosted, linux, x64, gpu"
    gpu_providers: str = "CUDAExecutionProvider"
    baseline_dir: str = "baselines"  # relative to the repository root: what the GPU job uploads
    shards: int = 0  # the single and fork flows' check as a matrix of this many legs (0: one job)
    default_branch: str = "main"  # its pushes fill the export cache every pull request starts from

    def __post_init__(self) -> None:
        if self.shards and self.kind not in SHARDED_FLOWS:
            raise ValueError(f"shards: the {self.kind} flow has no sharded check (the single and fork flows do)")

    @property
    def shard_inputs(self) -> tuple[tuple[str, str], ...]:  # a leg's shard from the matrix, and how many
        return (("shard", "${{ matrix.shard }}"), ("shards", str(self.shards))) if self.shards else ()


def _with(flow: Flow, *pairs: tuple[str, str], model: bool = False, gate: bool = False) -> str:
    """The step's ``with:``: ``model`` for jobs that import the model (they install its requirements),
    ``gate`` for the job that judges (it enforces baseline approval)."""
    items = [p for p in pairs if p[1]]
    if model and flow.pip_args:
        items.append(("extra-pip-args", json.dumps(flow.pip_args)))
    if gate and flow.require_approval:
        items.append(("baseline-changes", "require-approval"))
    if not items:
        return ""
    return "        with:\n" + "".join(f"          {k}: {v}\n" for k, v in items)


def _trigger(flow: Flow) -> str:
    # A cache saved by a pull request is that pull request's alone; the default branch's is every pull
    # request's. Its pushes (a merge) export and save, so a new pull request's first run starts warm.
    push = (f"  push:\n    branches: [{json.dumps(flow.default_branch)}]  # fills the export cache every pull "
            "request starts from\n")
    if not flow.require_approval:
        return "on:\n  pull_request:\n" + push
    # A label or an approving review must run the gate again.
    return ("on:\n  pull_request:\n    types: [opened, synchronize, reopened, labeled, unlabeled]\n"
            "  pull_request_review:\n    types: [submitted, dismissed]\n" + push)


def _steps(action: str = "", ref: str = "") -> str:
    """The checkout, then ``action``: credentials are not left in .git/config, where the pull request's
    code could read them."""
    pinned = f"          ref: {ref}  # the commit this run was made (and approved) for\n" if ref else ""
    return (f"    steps:\n      - uses: {CHECKOUT}\n        with:\n{pinned}          persist-credentials: false\n"
            + (f"      - uses: {action}\n" if action else ""))


def _matrix(flow: Flow) -> str:
    if not flow.shards:
        return ""
    return ("    strategy:\n      fail-fast: false  # every leg reports: the verdict names every model\n"
            f"      matrix:\n        shard: {_shard_list(flow)}\n")


def _shard_list(flow: Flow) -> str:
    return f"[{', '.join(str(k) for k in range(1, flow.shards + 1))}]"


VERDICT_PERMISSIONS = ("    permissions:\n      pull-requests: write  # the comment; the changed files, labels and reviews\n"
                       "      statuses: write  # the verdict on the pull request's head commit: the status to require\n")

def _verdict(flow: Flow) -> str:
    """The gpu flow's job that judges the report artifact and comments: it holds the write token, so nothing
    of the pull request runs here (no checkout; the action's mode comment installs parity-gate's core only)."""
    return ("  verdict:  # judges the report and comments; never checks out or runs the pull request's code\n"
            "    name: verdict\n    needs: report\n"
            "    if: ${{ !cancelled() && needs.report.result == 'success' }}  # only what the report job made\n"
            "    runs-on: ubuntu-latest\n    timeout-minutes: 15\n" + VERDICT_PERMISSIONS
            + f"    steps:\n      - uses: {flow.action}\n"
            + _with(flow, ("mode", "comment"), ("report-artifact", REPORT), gate=True))


APPROVE = ("  approve:\n    name: approve a fork's run\n"
           "    # A fork's code runs nowhere, the GPU runner included, until a maintainer approves this run\n"
           f"    # (environment {FORK_ENVIRONMENT}: required reviewers). Same-repository pull requests skip it.\n"
           f"    if: {SAME_REPO.replace('==', '!=')}\n"
           f"    runs-on: ubuntu-latest\n    timeout-minutes: 5\n    environment: {FORK_ENVIRONMENT}\n"
           "    steps:\n      - name: Approved\n        env:\n          SHA: " + HEAD_SHA + "\n"
           '        run: echo "approved to run commit $SHA"\n')


def _pr_job(flow: Flow, name: str, head: str, runs_on: str, step_with: str, timeout: int = 60) -> str:
    """A job of the gpu flow that runs the pull request's code: read-only, at the head commit, no cache
    (this event's cache is the base branch's, which the pull request's code must not write)."""
    return (f"  {name}:{head}\n    name: {name}\n    runs-on: {runs_on}\n    timeout-minutes: {timeout}\n"
            + READ_ONLY + _steps(flow.action, HEAD_SHA) + step_with)


def gpu(flow: Flow) -> str:
    nocache = ("cache", "false")
    types = "opened, synchronize, reopened" + (", labeled, unlabeled" if flow.require_approval else "")
    return (HEADER + "name: parity-gate\n"
            "on:\n  pull_request_target:  # this file as the base branch has it: a pull request cannot change "
            f"what runs where\n    types: [{types}]\n" + "permissions: {}\n"
            + CONCURRENCY.replace(" || github.ref", "") + "jobs:\n" + APPROVE
            + _pr_job(flow, "export", "  # the models, exported once; the float64 reference and torch providers run here\n"
                      "    needs: approve\n    if: ${{ !cancelled() && (needs.approve.result == 'success' || "
                      "needs.approve.result == 'skipped') }}", "ubuntu-latest",
                      _with(flow, ("mode", "export"), nocache, model=True))
            + _pr_job(flow, "cpu", "\n    needs: export", "ubuntu-latest",
                      _with(flow, ("mode", "collect"), ("providers", "CPUExecutionProvider"), nocache))
            + _pr_job(flow, "gpu", "  # the self-hosted runner: its own runner group, ephemeral (docs/action.md)\n"
                      "    needs: export", f"[{', '.join(runner_labels(flow))}]",
                      _with(flow, ("mode", "collect"), ("providers", flow.gpu_providers),
                            ("onnxruntime", "onnxruntime-gpu"), nocache))
            + _pr_job(flow, "report", "  # fails only when it makes no report: the verdict job judges it\n"
                      "    needs: [export, cpu, gpu]\n"
                      "    if: ${{ !cancelled() && needs.export.result == 'success' }}  # a failed leg fails "
                      "`require`", "ubuntu-latest",
                      _with(flow, ("mode", "report"), ("comment", "never"), ("fail-on", "never"),
                            ("report-artifact", REPORT), ("require", f"CPUExecutionProvider {flow.gpu_providers}"),
                            nocache), timeout=30)
            + _verdict(flow))


def runner_labels(flow: Flow) -> list[str]:
    return [label.strip() for label in flow.gpu_runner.split(",") if label.strip()]


def _by_hand(name: str, path: str, artifact: str, inputs: str = "") -> str:
    """The head of a workflow that records baselines when run by hand, one recording at a time."""
    return (HEADER + f"name: {name}\n"
            f"on:\n  workflow_dispatch:  # Actions → {name} → Run workflow, or: gh workflow run "
            f"{path.rsplit('/', 1)[1]}\n    inputs:\n" + inputs
            + "      open-pr:\n        description: \"Open a pull request with the new baselines (else download the "
            f"{artifact} artifact and commit it)\"\n        type: boolean\n        default: true\n"
            "permissions: {}\n"
            "concurrency:  # one recording at a time: two would race to the same files\n"
            f"  group: {artifact}\n  cancel-in-progress: false\njobs:\n")


def gpu_baselines(flow: Flow) -> str:
    """Record the GPU providers' entries on the GPU runner, by hand; a hosted job opens the pull request."""
    return (_by_hand(GPU_BASELINES_NAME, GPU_BASELINES, GPU_BASELINES_ARTIFACT,
                     "      models:\n        description: \"Models to record (space or comma separated; empty: all)\"\n"
                     "        required: false\n        default: \"\"\n")
            + "  record:  # the self-hosted GPU runner (docs/action.md): entries of the other providers are kept\n"
            f"    name: record\n    runs-on: [{', '.join(runner_labels(flow))}]\n    timeout-minutes: 60\n"
            + READ_DEFAULT
            + _steps(flow.action)
            + _with(flow, ("mode", "update-baseline"), ("models", "${{ inputs.models }}"),
                    ("providers", flow.gpu_providers), ("onnxruntime", "onnxruntime-gpu"), model=True)
            + _pull_request(flow, "record", GPU_BASELINES_ARTIFACT, "GPU baselines", "on the GPU runner ",
                            "it never runs on the GPU machine"))


def sharded_baselines(flow: Flow) -> str:
    """Re-record every baseline by hand as a matrix: each leg records its shard (``update-baseline --shard
    K/N``) and uploads its share; one job merges the shares (``merge --baselines``: a share missing or
    doubled is refused) and uploads the folder once; a hosted job opens the pull request."""
    return (_by_hand(BASELINES_NAME, BASELINES, BASELINES_ARTIFACT)
            + "  record:  # each leg records one shard of the models and uploads its share\n"
            f"    name: record (shard ${{{{ matrix.shard }}}} of {flow.shards})\n    runs-on: ubuntu-latest\n"
            f"    timeout-minutes: 60\n    strategy:\n      matrix:\n        shard: {_shard_list(flow)}\n"
            + READ_DEFAULT + _steps(flow.action)
            + _with(flow, ("mode", "update-baseline"), *flow.shard_inputs, model=True)
            + "  merge:  # every shard's share, each model recorded by exactly one leg, or nothing (exit 2)\n"
            "    name: merge\n    needs: record\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n"
            + READ_DEFAULT + _steps(flow.action)
            + _with(flow, ("mode", "update-baseline"), ("shards", str(flow.shards)))
            + _pull_request(flow, "merge", BASELINES_ARTIFACT, "baselines", "", "it runs none of the models"))


def _pull_request(flow: Flow, needs: str, artifact: str, what: str, where: str, note: str) -> str:
    """The recording job's upload, and the hosted job that holds the write token: it opens a pull request
    with the recorded baselines and runs nothing of the models."""
    folder, slug = flow.baseline_dir.strip("/"), what.lower().replace(" ", "-")
    return (f"      - uses: {UPLOAD}\n        with:\n          name: {artifact}\n          path: {folder}/\n"
            "          if-no-files-found: error\n"
            f"  pull-request:  # a hosted job holds the write token: {note}\n"
            f"    name: pull request\n    needs: {needs}\n    if: ${{{{ inputs.open-pr }}}}\n"
            "    runs-on: ubuntu-latest\n    timeout-minutes: 10\n"
            "    permissions:\n      contents: write  # push the branch\n"
            "      pull-requests: write  # open the pull request (the repository must allow Actions to create them)\n"
            + _steps() + f"      - uses: {DOWNLOAD}\n        with:\n          name: {artifact}\n"
            f"          path: {folder}/\n"
            f"      - name: Open a pull request with the new baselines\n        env:\n"
            "          GH_TOKEN: ${{ github.token }}\n"
            f"          BRANCH: parity-gate/{slug}-${{{{ github.run_id }}}}\n"
            f"          FOLDER: {folder}\n"
            "        run: |\n"
            "          git config user.name \"github-actions[bot]\"\n"
            "          git config user.email \"41898282+github-actions[bot]@users.noreply.github.com\"\n"
            "          git switch -c \"$BRANCH\"\n"
            "          git add \"$FOLDER\"\n"
            "          if git diff --cached --quiet; then echo \"No baseline changed.\"; exit 0; fi\n"
            f"          git commit -m \"Record {what} (run $GITHUB_RUN_ID)\"\n"
            "          gh auth setup-git  # the token pushes through gh's credential helper, never .git/config\n"
            "          git push origin \"$BRANCH\"\n"
            f"          gh pr create --head \"$BRANCH\" --title \"Record {what}\" --body \"Recorded {where}"
            "by run $GITHUB_RUN_ID. Review what moved with git diff (parity-gate diff-driver).\"\n")


def _keep_for_comment(flow: Flow) -> str:
    """The fork flow's hand-over: the report and the pull request's number, as an artifact the comment workflow
    downloads (one per leg and attempt when sharded, as the merge expects them)."""
    name = (f"{PR_ARTIFACT}-shard-${{{{ matrix.shard }}}}-of-{flow.shards}-a${{{{ github.run_attempt }}}}"
            if flow.shards else PR_ARTIFACT)
    return ("      - name: Keep the report and the PR number for the comment workflow\n"
            "        if: ${{ !cancelled() && steps.gate.outputs.report-json != '' }}\n"
            "        env:\n          REPORT: ${{ steps.gate.outputs.report-json }}\n"
            "          PR_NUMBER: ${{ github.event.pull_request.number }}\n"
            "        run: |\n          mkdir -p parity-gate-pr\n          cp \"$REPORT\" parity-gate-pr/report.json\n"
            "          echo \"$PR_NUMBER\" > parity-gate-pr/number\n"
            f"      - uses: {UPLOAD}\n"
            "        if: ${{ !cancelled() && steps.gate.outputs.report-json != '' }}\n"
            f"        with:\n          name: {name}\n          path: parity-gate-pr/\n")


def _fetch_for_comment(flow: Flow) -> str:
    """The comment workflow's download from the run that computed the report(s), and the number it carries (a
    hint: the action checks it against that run's head commit)."""
    what = f"pattern: {PR_ARTIFACT}-shard-*-of-{flow.shards}-a*" if flow.shards else f"name: {PR_ARTIFACT}"
    number = ("cat parity-gate-pr/*/number | tr -cd '0-9\\n' | head -n 1 | cut -c1-12" if flow.shards
              else "tr -cd '0-9' < parity-gate-pr/number | cut -c1-12")
    return (f"      - uses: {DOWNLOAD}\n        with:\n          {what}\n"
            "          path: parity-gate-pr\n          run-id: ${{ github.event.workflow_run.id }}\n"
            "          github-token: ${{ github.token }}\n"
            "      - id: pr  # a hint only: the action checks it against the run's head commit\n"
            f"        run: echo \"number=$({number})\" >> \"$GITHUB_OUTPUT\"\n")


def fork(flow: Flow) -> tuple[str, str]:
    """The pull_request workflow (read-only) and the workflow_run workflow that judges and comments."""
    what = "each leg runs one shard of the models" if flow.shards else "runs the pull request's code"
    name = f"check (shard ${{{{ matrix.shard }}}} of {flow.shards})" if flow.shards else "check"
    check = (HEADER + "name: parity-gate\n" + _trigger(flow) + "permissions: {}\n" + CONCURRENCY + "jobs:\n"
             f"  parity-gate:  # {what} with a read-only token\n"
             f"    name: {name}\n    runs-on: ubuntu-latest\n    timeout-minutes: 60\n" + _matrix(flow)
             + READ_ONLY + _steps(flow.action) + "        id: gate\n"
             + _with(flow, ("comment", "never"), *flow.shard_inputs, model=True) + _keep_for_comment(flow))
    report = ((("shards", str(flow.shards)), ("shard-reports", "parity-gate-pr")) if flow.shards
              else (("report-json", "parity-gate-pr/report.json"),))
    comment = (HEADER + "name: parity-gate comment\non:\n  workflow_run:\n    workflows: [parity-gate]\n"
               "    types: [completed]\npermissions: {}\n"
               "concurrency:  # one run per pull request at a time: no race between reading and writing its comment\n"
               "  group: parity-gate-comment-${{ github.event.workflow_run.head_repository.full_name }}-"
               "${{ github.event.workflow_run.head_branch }}\n  cancel-in-progress: false\n"
               "jobs:\n  comment:\n    name: verdict\n"
               "    if: github.event.workflow_run.event == 'pull_request' || "
               "github.event.workflow_run.event == 'pull_request_review'\n"
               "    runs-on: ubuntu-latest\n    timeout-minutes: 15\n"
               "    permissions:\n      actions: read  # download the other run's artifact\n"
               + VERDICT_PERMISSIONS.split("\n", 1)[1] + "    steps:\n"
               "      # No actions/checkout: nothing from the pull request runs here; the report is read as data.\n"
               + _fetch_for_comment(flow)
               + f"      - uses: {flow.action}\n"
               + _with(flow, ("mode", "comment"), *report, ("pr-number", "${{ steps.pr.outputs.number }}"), gate=True))
    return check, comment


def workflows(flow: Flow) -> dict[str, str]:
    """Workflow files by path, relative to the repository root (``single`` is written as ``fork`` is: the
    judge from the default branch)."""
    if flow.kind == "gpu":
        return {".github/workflows/parity-gate.yml": gpu(flow), GPU_BASELINES: gpu_baselines(flow)}
    check, comment = fork(flow)
    return {".github/workflows/parity-gate.yml": check, ".github/workflows/parity-gate-comment.yml": comment,
            **({BASELINES: sharded_baselines(flow)} if flow.shards else {})}

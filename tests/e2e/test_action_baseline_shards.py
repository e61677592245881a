"""A sharded re-recording, job by job, as `parity-gate init --shards N` writes it
(parity-gate-baselines.yml), on this machine: each `record` leg runs update-baseline for its shard (a
stand-in that hands on a share of the bundled sweeps' committed baselines) and uploads its share as
`parity-gate-share-shard-K-of-N-a<attempt>`; the `merge` job runs the real `merge --baselines` over every
shard's latest share and uploads the baseline folder once; a share missing is refused (exit 2) and nothing
is uploaded."""

from __future__ import annotations

import ast
import json

import pytest
import yaml

from gate.commands.baseline_shards import write_share
from gate.commands.shards import plan
from gate.config import load_config
from gate.config.shards import Shard
from gate.scaffold.workflows import BASELINES, BASELINES_ARTIFACT, Flow, workflows
from tests.support import action_fixtures
from tests.support.action_fixtures import REPO, ROOT, TOKEN, git_workspace
from tests.support.action_jobs import run_job
from tests.support.action_runner import ActionRunner
from tests.support.prepared_venv import make_prepared_venv

SWEEPS = load_config(ROOT / "examples" / "sweeps.toml")
EVENT = {"inputs": {"open-pr": True}}
github = action_fixtures.github  # fixture: the API no job of this workflow but the pull request's calls


@pytest.fixture
def recording(tmp_path, github):
    """Runs a job of the re-recording workflow (3 shards) as its own job; the checkout holds a config whose
    baseline folder is `baselines`."""
    venv = make_prepared_venv(tmp_path / "venv")
    checkout = tmp_path / "checkout"
    git_workspace(checkout)
    (checkout / "parity-gate.toml").write_text(
        'baseline-dir = "baselines"\nproviders = ["torch-cpu"]\n[[models]]\nname = "m"\nfactory = "m:m"\n'
        'inputs = [{ name = "x", shape = [1] }]\n')
    doc = yaml.safe_load(workflows(Flow("single", shards=3))[BASELINES])

    def run(job_id: str, shard: int | None = None, **env: str):
        name = f"{job_id}-{shard}" if shard else job_id
        (tmp_path / name).mkdir(exist_ok=True)

        def make() -> ActionRunner:
            return ActionRunner(ROOT, tmp_path / name, api_url=github.url, event_name="workflow_dispatch",
                                event=EVENT, repository=REPO, job=job_id, env=env,
                                artifacts=tmp_path / "artifacts", temp=tmp_path / f"temp-{name}")

        return run_job(make, doc["jobs"][job_id], checkout=checkout, inputs={"venv-path": str(venv)},
                       token=TOKEN, matrix={"shard": shard} if shard else None)

    return doc, run


def share(tmp_path, k: int):
    folder = tmp_path / "prepared" / str(k)
    write_share(SWEEPS, plan(SWEEPS, SWEEPS.models, Shard(k, 3)), folder)
    return str(folder)


def test_the_legs_shares_are_merged_and_uploaded_once(recording, tmp_path):
    doc, run = recording
    assert doc["jobs"]["record"]["strategy"]["matrix"]["shard"] == [1, 2, 3]
    assert doc["jobs"]["merge"]["needs"] == "record" and doc["jobs"]["pull-request"]["needs"] == "merge"
    log = tmp_path / "calls.log"
    for k in (1, 2, 3):
        leg = run("record", k, PARITY_GATE_STUB_SHARE=share(tmp_path, k), PARITY_GATE_STUB_LOG=str(log))
        assert leg.result == "success", leg.log
    calls = [ast.literal_eval(line) for line in log.read_text().splitlines()]
    assert [env["PARITY_GATE_SHARD"] for _, env in calls] == ["1/3", "2/3", "3/3"]
    artifacts = tmp_path / "artifacts"
    assert sorted(p.name for p in artifacts.iterdir()) == [f"parity-gate-share-shard-{k}-of-3-a1"
                                                           for k in (1, 2, 3)]
    merged = run("merge")
    assert merged.result == "success", merged.log
    committed = {p.name: p.read_bytes() for p in SWEEPS.baseline_dir.glob("*.msgpack.zst")}
    uploaded = artifacts / BASELINES_ARTIFACT
    assert {p.name: p.read_bytes() for p in uploaded.glob("*.msgpack.zst")} == committed
    assert f"MERGED | {len(committed)} baseline files from 3 shards into baselines" in merged.log


def test_a_missing_share_fails_the_merge_and_uploads_nothing(recording, tmp_path):
    doc, run = recording
    for k in (1, 3):
        assert run("record", k, PARITY_GATE_STUB_SHARE=share(tmp_path, k)).result == "success"
    merged = run("merge")
    assert merged.result == "failure"
    [action] = merged.actions
    assert action.returncode == 2, action.log
    assert "no share from shard 2/3" in action.log
    assert not (tmp_path / "artifacts" / BASELINES_ARTIFACT).exists()
    assert json.dumps(doc["jobs"]["pull-request"]["permissions"]) == \
        '{"contents": "write", "pull-requests": "write"}'  # the only job with a write token runs no model

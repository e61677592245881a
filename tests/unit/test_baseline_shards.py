"""The shares of a sharded re-recording made one baseline folder (gate.commands.baseline_shards, ``merge
--baselines``), on the bundled sweeps' committed set files and the examples' baselines: the shares together
are the folder, byte for byte, and a share missing, doubled or claiming another's model is refused (exit 2)
before anything is written."""

from __future__ import annotations

import json
import shutil

import pytest

from gate.commands.baseline_shards import SHARE, combine, read_share, write_share
from gate.commands.shards import plan
from gate.config import load_config
from gate.config.shards import Shard
from gate.errors import GateError
from tests.conftest import ROOT, run_cli

SWEEPS = load_config(ROOT / "examples" / "sweeps.toml")
COUNT = 3
CONFIG = 'baseline-dir = "baselines"\nproviders = ["torch-cpu"]\n[[models]]\nname = "m"\nfactory = "m:m"\n' \
    'inputs = [{ name = "x", shape = [1] }]\n'


def shares(tmp_path, config=SWEEPS, count=COUNT):
    """Each shard's share as its leg hands it on (here, of the committed baselines)."""
    folders = []
    for k in range(1, count + 1):
        folder = tmp_path / "legs" / f"parity-gate-baselines-shard-{k}-of-{count}-a1"
        write_share(config, plan(config, config.models, Shard(k, count)), folder)
        folders.append(folder)
    return folders


def committed(config=SWEEPS) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in config.baseline_dir.glob("*.msgpack.zst")}


@pytest.mark.parametrize("config", [SWEEPS, load_config(ROOT / "pyproject.toml")], ids=["sweeps", "models"])
def test_the_shares_together_are_the_whole_folder_byte_for_byte(tmp_path, config):
    folders = shares(tmp_path, config, 2)
    into = tmp_path / "baselines"
    written = combine([read_share(f) for f in folders], 2, into)
    assert {p.name: p.read_bytes() for p in into.iterdir()} == committed(config)
    assert len({share.run.shard for share in written.values()}) == 2  # each leg wrote some of them


def test_a_sweeps_cases_are_one_legs_and_its_set_file_with_them(tmp_path):
    for folder in shares(tmp_path):
        doc = json.loads((folder / SHARE).read_text())
        sweeps = set(doc["sweeps"].values())
        assert {p.name for p in folder.glob("*.msgpack.zst")} == {f"{s}.msgpack.zst" for s in sweeps}
        assert sorted(doc["sweeps"]) == sorted(doc["recorded"])


def refused(folders, into, count=COUNT) -> str:
    with pytest.raises(GateError) as info:
        combine([read_share(f) for f in folders], count, into)
    assert info.value.exit_code == 2
    assert not into.exists()  # nothing half-written
    return str(info.value)


def test_a_missing_share_is_refused_naming_the_shard(tmp_path):
    folders = shares(tmp_path)
    message = refused([folders[0], folders[2]], tmp_path / "out")
    assert "was recorded by no leg: no share from shard 2/3" in message, message


def test_an_overlapping_share_is_refused_naming_both_shards(tmp_path):
    folders = shares(tmp_path)
    doc = json.loads((folders[0] / SHARE).read_text())
    other = json.loads((folders[1] / SHARE).read_text())
    taken = other["recorded"][0]
    doc["recorded"].append(taken)  # shard 1 says it recorded one of shard 2's models, too
    doc["sweeps"][taken] = other["sweeps"][taken]
    shutil.copy(folders[1] / f"{other['sweeps'][taken]}.msgpack.zst", folders[0])
    (folders[0] / SHARE).write_text(json.dumps(doc))
    assert refused(folders, tmp_path / "out") == (
        f"model `{taken}` recorded twice: by shard 1/3 (`{folders[0].name}`) and "
        f"shard 2/3 (`{folders[1].name}`)")
    assert refused([*folders, folders[1]], tmp_path / "out").startswith("shard 2/3 has two shares: ")


def test_a_share_without_the_file_it_names_is_refused(tmp_path):
    folders = shares(tmp_path)
    doc = json.loads((folders[2] / SHARE).read_text())
    (folders[2] / f"{doc['sweeps'][doc['recorded'][0]]}.msgpack.zst").unlink()
    message = refused(folders, tmp_path / "out")
    assert message.startswith(f"shard 3/3 (`{folders[2].name}`) recorded model `{doc['recorded'][0]}` "
                              "but holds no baseline of it"), message


def test_the_command_merges_the_latest_artifacts_and_refuses_with_exit_2(tmp_path):
    folders = shares(tmp_path)
    (tmp_path / "parity-gate.toml").write_text(CONFIG)  # the baseline folder the shares go to
    into = tmp_path / "baselines"
    ok = run_cli("merge", "legs", "--shards", str(COUNT), "--baselines", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert f"MERGED | {len(committed())} baseline files from 3 shards into baselines" in ok.stdout
    assert {p.name: p.read_bytes() for p in into.iterdir()} == committed()
    shutil.rmtree(into)
    shutil.rmtree(folders[1])
    gone = run_cli("merge", "legs", "--shards", str(COUNT), "--baselines", cwd=tmp_path)
    assert gone.returncode == 2 and "no share from shard 2/3" in gone.stderr, gone.stderr
    assert not into.exists()


def test_out_without_a_shard_or_that_cannot_be_a_folder_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "parity-gate.toml").write_text(CONFIG)
    run = run_cli("update-baseline", "--out", "share", cwd=tmp_path)
    assert run.returncode == 2
    assert "--out writes one share of a sharded re-recording: give --shard K/N" in run.stderr
    assert not (tmp_path / "share").exists() and not (tmp_path / "baselines").exists()
    (tmp_path / "share").write_text("")  # a file where the share's folder goes: refused, nothing recorded
    run = run_cli("update-baseline", "--shard", "1/1", "--out", "share", cwd=tmp_path)
    assert run.returncode == 2 and "--out share: cannot be a folder for the share" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "baselines").exists()

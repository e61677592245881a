"""gate.github.changes: which files a pull request changes decide its verdict, by kind (real HTTP to the
fake GitHub: the file list and the contents API)."""

from __future__ import annotations

from gate.core.status import ChangeKind
from gate.github.changes import Decisive, GateChanges, Named, gate_changes
from gate.github.client import GitHubClient
from gate.github.pull import fetch_pull
from tests.support.fake_github import FakeGitHub

TOKEN, REPO, PR, BASE, HEAD = "t", "o/r", 3, "aa" * 20, "bb" * 20
TABLE = '[tool.parity-gate]\nproviders = ["torch-cpu"{more}]\n'


def changes(fake: FakeGitHub, files: list[dict], named: Named | None = None) -> GateChanges:
    fake.pulls[REPO] = [{"number": PR, "state": "open", "user": {"login": "a"}, "base": {"sha": BASE},
                         "head": {"sha": HEAD, "ref": "b", "label": "o:b", "repo": {"full_name": REPO}}}]
    fake.files[(REPO, PR)] = files
    client = GitHubClient(TOKEN, fake.url)
    return gate_changes(client, fetch_pull(client, REPO, PR), named or Named())


def test_a_renamed_config_counts_under_both_names_and_the_table_decides():
    with FakeGitHub(token=TOKEN) as fake:
        fake.contents[(REPO, BASE, "pyproject.toml")] = TABLE.format(more="")
        fake.contents[(REPO, HEAD, "sub/pyproject.toml")] = TABLE.format(more="")
        found = changes(fake, [{"filename": "sub/pyproject.toml", "previous_filename": "pyproject.toml"}])
    table = "its [tool.parity-gate] table"
    assert found.files == (Decisive(ChangeKind.CONFIG, "pyproject.toml", table),
                           Decisive(ChangeKind.CONFIG, "sub/pyproject.toml", table))


def test_only_the_files_the_workflow_names_and_the_known_names_count():
    with FakeGitHub(token=TOKEN) as fake:
        found = changes(fake, [{"filename": f} for f in ("a/gate.toml", "gate.toml.bak", "x/ci/pins.txt", "pins.txt",
                                                          "baselines/m.msgpack.zst", ".github/workflows/w.yml",
                                                          ".github/actions/setup/action.yml", "docs/x.md")],
                        Named(config="./a/gate.toml", constraints="ci/pins.txt"))
    assert [(f.kind, f.path) for f in found.files] == [
        (ChangeKind.BASELINES, "baselines/m.msgpack.zst"), (ChangeKind.CONFIG, "a/gate.toml"),
        (ChangeKind.CONSTRAINTS, "x/ci/pins.txt"), (ChangeKind.WORKFLOWS, ".github/actions/setup/action.yml"),
        (ChangeKind.WORKFLOWS, ".github/workflows/w.yml")]
    assert found.kinds == (ChangeKind.BASELINES, ChangeKind.CONFIG, ChangeKind.CONSTRAINTS, ChangeKind.WORKFLOWS)


def test_a_configs_includes_count_whatever_their_extension_relative_to_the_config_that_owns_them():
    with FakeGitHub(token=TOKEN) as fake:
        fake.contents[(REPO, BASE, "pyproject.toml")] = '[tool.parity-gate]\ninclude = ["sweeps/*"]\n'
        fake.contents[(REPO, HEAD, "pyproject.toml")] = '[tool.parity-gate]\ninclude = ["sweeps/*"]\n'
        for ref in (BASE, HEAD):  # a config in a subfolder: its own patterns, against its own folder
            fake.contents[(REPO, ref, "models/vision/parity-gate.toml")] = 'include = ["cases/*.json"]\n'
        paths = ("sweeps/act.yaml", "models/vision/cases/conv.json", "cases/conv.json",
                 "models/vision/cases/readme.md")
        found = changes(fake, [{"filename": f} for f in paths])
    assert [(f.path, f.note) for f in found.files] == [
        ("models/vision/cases/conv.json", "included by models/vision/parity-gate.toml"),
        ("sweeps/act.yaml", "included by pyproject.toml")]


def test_what_an_approval_approves_is_named_by_kind():
    assert GateChanges().what() == GateChanges.of_baselines(["m.msgpack.zst"]).what() == "baseline change"
    assert GateChanges((Decisive(ChangeKind.CONFIG, "p"),)).what() == "change to its config"
    assert GateChanges((Decisive(ChangeKind.BASELINES, "b"), Decisive(ChangeKind.CONSTRAINTS, "c"),
                        Decisive(ChangeKind.WORKFLOWS, "w"))).what() == \
        "change to its baselines, constraints and workflows"

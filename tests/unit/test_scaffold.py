"""gate.scaffold: the inputs init reads, the config text it writes, the requirements it finds."""

from __future__ import annotations

import pytest

from gate.errors import ConfigError
from gate.scaffold.config_text import Input, model_name, parse_input, section
from gate.scaffold.deps import model_requirements, release


@pytest.mark.parametrize(("text", "parsed"), [
    ("x=1x3x224x224", Input("x", (1, 3, 224, 224))),
    ("1,3,32,32", Input("x", (1, 3, 32, 32))),
    ("ids=1x16:int64", Input("ids", (1, 16), "int64")),
    (" mask = 1 * 16 : bool ", Input("mask", (1, 16), "bool")),
    ("attention_mask=2x16:int64[0,2)", Input("attention_mask", (2, 16), "int64", 0, 2)),
    ("x=1x8:float32[-1,0.5)", Input("x", (1, 8), "float32", -1.0, 0.5)),
    ("x=1x8[0,1e3)", Input("x", (1, 8), "float32", 0.0, 1000.0)),
])
def test_input_shapes_are_read_in_the_forms_people_type(text, parsed):
    assert parse_input(text) == parsed


def test_unnamed_inputs_after_the_first_are_numbered():
    assert parse_input("1x8", index=2).name == "x2"


@pytest.mark.parametrize(("text", "message"), [
    ("x=1xq", "input `x=1xq`: expected NAME=DIMS[:DTYPE]"),
    ("x=1x8:float128", "dtype `float128` is not one of"),
    ("m=2x16:int64[0,2]", "input `m=2x16:int64[0,2]`: write the range half-open, [LOW,HIGH): HIGH itself is never drawn"),
    ("m=2x16:int64[0.5,2)", "input `m=2x16:int64[0.5,2)`: an int64 input's range takes integers, e.g. [0,2)"),
    ("m=2x16:int64[2,2)", "input `m=2x16:int64[2,2)`: the range [2,2) is empty: HIGH must be greater than LOW"),
    ("m=2x16:bool[0,2)", "a bool input takes no range"),
])
def test_bad_inputs_name_themselves(text, message):
    with pytest.raises(ConfigError) as err:
        parse_input(text)
    assert message in str(err.value)


def test_a_range_and_an_inputs_callable_are_written_as_the_config_reads_them(tmp_path):
    from gate.config import load_config

    text = section("m", "models:net", [parse_input("ids=2x16:int64[0,30522)"), parse_input("attention_mask=2x16:int64[0,2)")])
    assert 'inputs = [{ name = "ids", shape = [2, 16], dtype = "int64", low = 0, high = 30522 }, ' in text
    (tmp_path / "parity-gate.toml").write_text(text)
    (model,) = load_config(tmp_path / "parity-gate.toml").models
    assert [(i.name, i.low, i.high) for i in model.inputs] == [("ids", 0, 30522), ("attention_mask", 0, 2)]
    assert 'inputs = "models.data:sample"' in section("m", "models:net", "models.data:sample")
    with pytest.raises(ConfigError, match="inputs `sample`: expected module:function"):
        section("m", "models:net", "sample")


def test_integer_inputs_named_like_a_mask_type_position_index_timestep_class_or_label_are_told_the_range():
    from gate.config import InputSpec
    from gate.config.input_ranges import advice

    said = advice("bert", InputSpec("attention_mask", (2, 16), "int64"))
    assert said.message() == (
        "model `bert`: integer input `attention_mask` looks like a mask and takes the default range 0..99, but a "
        "mask holds 0 and 1: give its range, `low = 0, high = 2` in its inputs (or --input "
        "'attention_mask=2x16:int64[0,2)'), then re-record its baseline")
    assert advice("bert", InputSpec("position_ids", (1, 128), "int64")).high == 128
    assert (advice("bert", InputSpec("token_type_ids", (1, 8), "int32")).kind, advice("g", InputSpec(
        "gather_idx", (4,), "int64")).high) == ("token type", None)
    assert "an index stays below the size it indexes (N)" in advice("g", InputSpec("indices", (4,), "int64")).message()
    kinds = {name: advice("m", InputSpec(name, (2,), "int64")) for name in
             ("timestep", "timesteps", "t", "num_steps", "step", "class_labels", "cls", "labels", "target")}
    assert {name: a.kind for name, a in kinds.items()} == {
        "timestep": "timestep", "timesteps": "timestep", "t": "timestep", "num_steps": "step", "step": "step",
        "class_labels": "class", "cls": "class", "labels": "label", "target": "label"}
    assert ("a diffusion timestep runs 0..N-1 (N: the scheduler's num_train_timesteps, 1000 for most): give "
            "its range, `low = 0, high = N`") in kinds["timestep"].message()
    assert all(a.high is None for a in kinds.values())  # only the user knows how many
    for quiet in (InputSpec("input_ids", (2, 16), "int64"), InputSpec("attention_mask", (2, 16), "int64", 0, 2),
                  InputSpec("timestep", (1,), "int64", 0, 1000), InputSpec("timestep", (1,), "float32"),
                  InputSpec("stepsize", (1,), "int64"), InputSpec("tokens", (2, 8), "int64"),
                  InputSpec("attention_mask", (2, 16), "float32"), InputSpec("attention_mask", (2, 16), "bool")):
        assert advice("bert", quiet) is None


def test_model_names_come_from_the_factory():
    assert model_name("models.vision:ResNet18") == "resnet18"
    assert model_name("m:build_model_v2") == "build_model_v2"
    assert model_name("m:__") == "model"


def test_the_section_is_refused_when_check_would_refuse_it():
    with pytest.raises(ConfigError, match="factory `not a factory`"):
        section("m", "not a factory", [Input("x", (1,))])
    with pytest.raises(ConfigError, match="model name `Bad Name`"):
        section("Bad Name", "m:f", [Input("x", (1,))])
    with pytest.raises(ConfigError, match="at least one input"):
        section("m", "m:f", [])


CONFIGURED = ('[project]\nname = "x"\n\n[tool.parity-gate]\nproviders = ["torch-cpu"]\n\n'
              '[[tool.parity-gate.models]]\nname = "a"\nfactory = "m:a"\n'
              'inputs = [{ name = "x", shape = [2, 3] }]\n\n'
              '[[tool.parity-gate.models]]\nname = "b"\nfactory = "m:b"\n'
              'inputs = [{ name = "ids", shape = [2, 8], dtype = "int64", low = 0, high = 50 }]\n\n'
              '[tool.ruff]\nline-length = 9\n')
PINS = "# mine\ntorch==2.0.0\ntimm==1.0.3\n"


def _configured(root, approval: bool = False):
    from gate.scaffold.workflows import Flow, workflows

    (root / "pyproject.toml").write_text(CONFIGURED)
    (root / "parity-gate-constraints.txt").write_text(PINS)
    for path, text in workflows(Flow(pip_args="timm open_clip_torch", require_approval=approval)).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


@pytest.mark.parametrize("force", [False, True])
def test_init_again_keeps_every_model_requirement_and_pin(tmp_path, force):
    from gate.scaffold import Options, apply, plan

    _configured(tmp_path)
    p = plan(Options(tmp_path, "m:a", (parse_input("x=2x3"),), force=force, pip_args="torchvision"))
    apply(p)
    assert (tmp_path / "pyproject.toml").read_text() == CONFIGURED
    workflow = (tmp_path / ".github/workflows/parity-gate.yml").read_text()
    assert 'extra-pip-args: "timm open_clip_torch torchvision"' in workflow
    pins = (tmp_path / "parity-gate-constraints.txt").read_text()
    assert pins.startswith(PINS)
    assert {c.path: c.action for c in p.changes}["pyproject.toml"] == "keep"


def test_approval_is_turned_on_in_place_and_force_never_turns_it_off(tmp_path):
    from gate.scaffold import Options, apply, plan
    from gate.scaffold.workflows import Flow, workflows

    _configured(tmp_path)
    path = tmp_path / ".github/workflows/parity-gate.yml"
    path.write_text(path.read_text() + "# my own line\n")
    p = plan(Options(tmp_path, "m:a", (parse_input("x=2x3"),), require_approval=True))
    assert {c.path: c.action for c in p.changes}[".github/workflows/parity-gate.yml"] == "edit"
    apply(p)
    flow = Flow(pip_args="timm open_clip_torch", require_approval=True)
    expected = workflows(flow)[".github/workflows/parity-gate.yml"]
    assert path.read_text() == expected + "# my own line\n"
    assert (tmp_path / "pyproject.toml").read_text() == CONFIGURED
    apply(plan(Options(tmp_path, "m:a", (parse_input("x=2x3"),), force=True)))
    judge = tmp_path / ".github/workflows/parity-gate-comment.yml"  # the judge, from the default branch
    assert "baseline-changes: require-approval" in judge.read_text()


@pytest.mark.parametrize(("kind", "shards"),
                         [("single", 0), ("single", 3), ("fork", 0), ("fork", 3), ("gpu", 0)])
def test_approval_in_place_is_what_init_writes_with_it(kind, shards):
    from gate.scaffold.approval import with_approval
    from gate.scaffold.workflows import Flow, workflows

    without = workflows(Flow(kind, pip_args="torchvision", shards=shards))
    with_it = workflows(Flow(kind, pip_args="torchvision", require_approval=True, shards=shards))
    for path, text in without.items():
        assert with_approval(text) == with_it[path], path
        assert with_approval(with_it[path]) == with_it[path]


def test_requirements_are_the_packages_the_factory_code_imports(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("from .nets import build\n")
    (tmp_path / "app" / "nets.py").write_text("import os\nimport torch\nfrom . import util\nimport yaml\n")
    (tmp_path / "app" / "util.py").write_text("import hypothesis\n")
    assert model_requirements("app:build", tmp_path) == ["hypothesis", "PyYAML"]
    assert model_requirements("missing.module:f", tmp_path) == []


def _installed(site, name: str, top: str) -> None:
    """A distribution's metadata as pip leaves it in ``site``: ``top`` is the package it provides."""
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "top_level.txt").write_text(f"{top}\n")


def _src_layout(root, monkeypatch):
    """A git repository with src/mypkg installed as `pip install -e .` leaves it (its metadata in a .venv
    kept in the repository, src/ on the path), and extpkg, a package installed into that .venv."""
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    pkg = root / "src" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text("import torch\nimport yaml\nimport extpkg\nfrom .layers import Block\n"
                                   "from mypkg import util\n")
    (pkg / "layers.py").write_text("import hypothesis\n\nBlock = None\n")
    (pkg / "util.py").write_text("")
    site = root / ".venv" / "lib" / "python3" / "site-packages"
    _installed(site, "mypkg", "mypkg")
    (site / "extpkg").mkdir()
    (site / "extpkg" / "__init__.py").write_text("")
    _installed(site, "extpkg", "extpkg")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(root / "src"))


def test_the_repositorys_own_package_is_never_a_requirement_wherever_it_lies(tmp_path, monkeypatch):
    _src_layout(tmp_path, monkeypatch)
    assert model_requirements("mypkg.models:net", tmp_path) == ["extpkg", "hypothesis", "PyYAML"]


def test_a_package_installed_into_an_environment_inside_the_repository_is_one(tmp_path, monkeypatch):
    _src_layout(tmp_path, monkeypatch)
    (tmp_path / "models.py").write_text("import extpkg\n")
    assert model_requirements("models:net", tmp_path) == ["extpkg"]


def test_a_local_build_label_pins_the_release():
    assert release("2.14.1+cpu") == "2.14.1" and release("1.32.0") == "1.32.0"


def test_adding_requirements_leaves_a_requirements_file_and_known_packages_alone():
    from gate.scaffold.add import merge_pip_args
    from gate.scaffold.workflows import Flow, workflows

    for kind in ("single", "gpu", "fork"):
        for text in workflows(Flow(kind, pip_args="-r requirements.txt")).values():
            assert merge_pip_args(text, ["timm"]) == text
        for text in workflows(Flow(kind, pip_args="torchvision==0.29.1")).values():
            merged = merge_pip_args(text, ["torchvision", "timm"])
            assert merge_pip_args(merged, ["torchvision", "timm"]) == merged  # idempotent
            if "extra-pip-args" in text:
                assert 'extra-pip-args: "torchvision==0.29.1 timm"' in merged


def test_constraints_gain_pins_only_for_new_packages():
    from gate.scaffold.add import merge_constraints

    text = "# pins\ntorch==2.0.0\n"
    assert merge_constraints(text, ["torch"]) == text  # an existing pin is the user's
    assert merge_constraints(text, ["not-an-installed-package"]) == text  # nothing installed to pin


def test_shards_make_the_check_a_matrix_with_one_verdict_in_the_single_and_fork_flows():
    import yaml

    from gate.scaffold.workflows import Flow, workflows

    # the default branch judges in both
    assert workflows(Flow("single", shards=3)) == workflows(Flow("fork", shards=3))
    files = workflows(Flow("fork", shards=3))
    legs, comment = (yaml.safe_load(files[f".github/workflows/{n}.yml"])
                     for n in ("parity-gate", "parity-gate-comment"))
    assert legs["jobs"]["parity-gate"]["strategy"] == {"fail-fast": False, "matrix": {"shard": [1, 2, 3]}}
    upload = legs["jobs"]["parity-gate"]["steps"][-1]
    assert upload["with"]["name"] == "parity-gate-pr-shard-${{ matrix.shard }}-of-3-a${{ github.run_attempt }}"
    download, _, gate = comment["jobs"]["comment"]["steps"]
    assert download["with"]["pattern"] == "parity-gate-pr-shard-*-of-3-a*"
    assert gate["with"]["shards"] == 3 and gate["with"]["shard-reports"] == "parity-gate-pr"
    # The re-recording is cut alike: a leg per shard, one merge, one pull request.
    recording = yaml.safe_load(files[".github/workflows/parity-gate-baselines.yml"])["jobs"]
    assert recording["record"]["strategy"] == {"matrix": {"shard": [1, 2, 3]}}
    assert recording["record"]["steps"][-1]["with"] == {"mode": "update-baseline",
                                                        "shard": "${{ matrix.shard }}", "shards": 3}
    assert recording["merge"]["steps"][1]["with"] == {"mode": "update-baseline", "shards": 3}
    assert ".github/workflows/parity-gate-baselines.yml" not in workflows(Flow("single"))


def test_no_flow_judges_with_a_workflow_the_pull_request_can_edit():
    import yaml

    from gate.scaffold.workflows import FLOWS, Flow, workflows

    for kind in FLOWS:
        for approval in (False, True):
            for text in workflows(Flow(kind, require_approval=approval)).values():
                doc = yaml.safe_load(text)
                on = doc[True] if True in doc else doc["on"]
                judges = [j for j in doc["jobs"].values() if any(s.get("with", {}).get("mode") == "comment"
                                                                  for s in j.get("steps", []))]
                if judges:  # the default branch's copy of the file: workflow_run, or pull_request_target
                    assert set(on) <= {"workflow_run", "pull_request_target"}, (kind, approval, set(on))


def test_init_writes_a_codeowners_entry_for_what_decides_and_keeps_the_files_own_lines(tmp_path):
    from gate.scaffold import Options, apply, plan

    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "CODEOWNERS").write_text("/docs/ @octo/writers\n/baselines/ @octo/ml\n")
    p = plan(Options(tmp_path, "models:net", "models:inputs"))
    [c] = [c for c in p.changes if c.path == ".github/CODEOWNERS"]
    assert c.action == "append"
    assert c.why.startswith("protect the verdict: a branch ruleset on the default branch requiring the "
                            "status parity-gate, the workflow")
    apply(p)
    assert (tmp_path / ".github" / "CODEOWNERS").read_text() == (
        "/docs/ @octo/writers\n/baselines/ @octo/ml\n"
        "# parity-gate: what decides the verdict is reviewed by its owners\n"
        "/.github/ @OWNER\n/parity-gate.toml @OWNER\n/parity-gate-constraints.txt @OWNER\n")
    assert "replace @OWNER" in c.why
    again = next(c for c in plan(Options(tmp_path, "models:net", "models:inputs")).changes
                 if c.path == ".github/CODEOWNERS")
    assert again.action == "keep" and again.why.startswith("protect the verdict")


def test_shards_are_refused_for_the_gpu_flow_and_past_their_limit(tmp_path):
    from gate.scaffold import Options, plan

    for flow, shards, message in (("gpu", 4, "--shards 4: the gpu flow exports once and collects per runner; a "
                                               "sharded check is written for the single and fork flows"),
                                  ("single", 257, "--shards 257: expected 2 to 256 legs (or 1: one job, no matrix)")):
        with pytest.raises(ConfigError) as err:
            plan(Options(tmp_path, "models:net", "models:inputs", flow=flow, shards=shards))
        assert str(err.value) == message


def test_the_default_branch_is_origins_head_else_main_or_master_checked_out(tmp_path):
    import subprocess

    from gate.scaffold import default_branch

    def git(*args: str, cwd) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    origin = tmp_path / "origin"
    git("init", "-q", "-b", "trunk", str(origin), cwd=tmp_path)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first", cwd=origin)
    git("clone", "-q", str(origin), "clone", cwd=tmp_path)
    git("switch", "-q", "-c", "feature", cwd=tmp_path / "clone")
    assert default_branch(tmp_path / "clone") == "trunk"  # origin's HEAD, whatever is checked out
    local = tmp_path / "local"
    git("init", "-q", "-b", "master", str(local), cwd=tmp_path)
    assert default_branch(local) == "master"
    git("switch", "-q", "-c", "feature", cwd=local)
    assert default_branch(local) == "main"  # a feature branch is no default
    assert default_branch(tmp_path) == "main"  # no repository

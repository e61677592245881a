"""A change that loosens the config that judges it (``check --changed-since``, gate.commands.loosened), on
real exports and ONNX Runtime sessions: a weight fault hidden by a raised tolerance passes only under the
change's config and says so, naming where the base's limits fail it; a provider the change drops is named.
Twins: the same loosening with no fault says nothing; the fault under the base's config fails."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import onnxruntime
import pytest

from gate import commands
from gate.cli.shared import _base, _with_flags
from gate.commands.loosened import unchecked as loosened_unchecked
from gate.config import Config, load_config
from gate.core.fields import Obj
from gate.render import render_markdown
from gate.verdict.types import Loosened
from tests.conftest import run_cli

MODEL = """import torch
from torch import nn
from pathlib import Path


def net():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    with torch.no_grad():
        m[2].weight.mul_(float((Path(__file__).parent / "scale.txt").read_text()))
    return m
"""
BASE = """baseline-dir = "baselines"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "net"
factory = "models:net"
inputs = [{ name = "x", shape = [2, 8], dtype = "float32" }]
"""
LOOSE = BASE.replace('"CPUExecutionProvider"]\n',
                     '"CPUExecutionProvider"]\ntolerance = { reference = 1e-2 }\n')


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("loosened")
    (tmp / "models.py").write_text(MODEL)
    (tmp / "scale.txt").write_text("1.0")
    (tmp / "parity-gate.toml").write_text(BASE)
    cfg = load_config(tmp / "parity-gate.toml")
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def _check(project: Path, text: str, scale: str):
    (project / "scale.txt").write_text(scale)
    cfg = load_config(project / "parity-gate.toml", text)
    base = load_config(project / "parity-gate.toml", BASE)
    report = commands.check(cfg, cfg.models, cfg.providers, base=base)
    return report, report.models[0]


def test_a_fault_a_raised_tolerance_hides_passes_only_saying_so_and_its_twins(project):
    report, model = _check(project, LOOSE, "1.001")
    assert report.verdict == "pass" and model.loosened is not None
    first = model.loosened.first
    assert (first.layer, first.provider, str(first.check)) == ("2", "torch-cpu", "reference-drift")
    said = "⚠️ `net`: it passes only under limits this change's config loosened: under the base's it fails"
    assert said in render_markdown(report)
    # the same loosening and no fault: the base's limits pass it too, nothing to say
    report, model = _check(project, LOOSE, "1.0")
    assert report.verdict == "pass" and model.loosened is None
    # the fault under the base's own config fails as ever
    report, model = _check(project, BASE, "1.001")
    assert report.verdict == "regressed" and model.loosened is None


def test_the_export_collect_report_path_says_it_too(project, tmp_path):
    """The GPU flow's verdict job: `report` over `export` and `collect` results judges under the base's
    config as `check` does; its twin, the same results under the base's own config, fails."""
    (project / "scale.txt").write_text("1.001")
    try:
        cfg = load_config(project / "parity-gate.toml", LOOSE)
        commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), tmp_path / "export")
        cpu = cfg.select_providers(["CPUExecutionProvider"])
        commands.collect(tmp_path / "export", cpu, tmp_path / "cpu.msgpack.zst")
        files = [tmp_path / "export", tmp_path / "cpu.msgpack.zst"]
        base = load_config(project / "parity-gate.toml", BASE)
        report = commands.report_files(cfg, files, base=base)
        loosened = report.models[0].loosened
        assert report.verdict == "pass" and loosened is not None and loosened.first is not None
        assert commands.report_files(base, files).verdict == "regressed"
    finally:
        (project / "scale.txt").write_text("1.0")


def test_a_provider_the_change_drops_is_named(project):
    report, model = _check(project, BASE.replace(', "CPUExecutionProvider"', ""), "1.0")
    assert report.verdict == "pass" and model.loosened is not None
    assert (model.loosened.first, model.loosened.dropped) == (None, ("CPUExecutionProvider",))


GPU = BASE.replace('"CPUExecutionProvider"]\n', '"CPUExecutionProvider", "CUDAExecutionProvider"]\n')
ALLOWED = "allow-missing-gpu = true\n" + GPU
REQUIRED = "require = [\"CUDAExecutionProvider\"]\n" + ALLOWED
no_cuda = pytest.mark.skipif("CUDAExecutionProvider" in onnxruntime.get_available_providers(),
                             reason="CUDA is here")


@no_cuda
@pytest.mark.parametrize(("base", "change", "dropped"), [
    (GPU, ALLOWED, ("CUDAExecutionProvider",)),  # allow-missing-gpu added: the GPU run the base fails without
    (REQUIRED, ALLOWED, ("CUDAExecutionProvider",)),  # require dropped: the provider the base must run
    (ALLOWED, ALLOWED, None),  # twins: the same rules at the base
    (REQUIRED.replace('["CUDA', '["CPU'), ALLOWED, None),  # a required provider that ran here
])
def test_a_provider_the_base_fails_for_not_running_here_is_named(project, base, change, dropped):
    """A GPU leg with no GPU passes under the change's config, and fails under the base's."""
    cfg = load_config(project / "parity-gate.toml", change)
    was = load_config(project / "parity-gate.toml", base)
    report = commands.check(cfg, cfg.models, cfg.providers, base=was)
    loosened = report.models[0].loosened
    assert report.verdict == "pass" and (loosened and loosened.dropped) == dropped
    assert (commands.check(was, was.models, was.providers).verdict == "pass") is (dropped is None)


@no_cuda
def test_the_command_lines_flags_judge_the_base_too(tmp_path):
    """--allow-missing-gpu is the workflow's, not the config change's: the base gets it too, so an
    unchanged config loosens nothing; the same key added to the config file is named."""
    _committed(tmp_path, {"parity-gate.toml": GPU})
    cfg = _with_flags(load_config(tmp_path / "parity-gate.toml"), True, None)
    assert _base(cfg, "HEAD", None, True, None) is None
    (tmp_path / "parity-gate.toml").write_text(ALLOWED)
    path = tmp_path / "parity-gate.toml"
    base = _base(load_config(path), "HEAD", path, False, None)
    assert isinstance(base, Config) and not base.allow_missing_gpu


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=folder, check=True,
                   capture_output=True)


def _committed(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", "base")


def test_the_config_at_the_base_comes_from_git(tmp_path):
    """Under this file's name, or the other one where the change moved the config (parity-gate.toml into
    pyproject.toml); the sweep files it includes as they were there; a config new in the change: none."""
    _committed(tmp_path, {"parity-gate.toml": BASE})
    (tmp_path / "parity-gate.toml").write_text(LOOSE)
    cfg = load_config(tmp_path / "parity-gate.toml")
    base = commands.base_config(cfg, "HEAD", tmp_path)
    assert not isinstance(base, str) and base is not None
    assert (base.models[0].tolerance.reference, cfg.models[0].tolerance.reference) == (1e-9, 1e-2)
    (tmp_path / "parity-gate.toml").unlink()
    moved = tmp_path / "pyproject.toml"
    moved.write_text("[tool.parity-gate]\n" + LOOSE.replace("[[models]]", "[[tool.parity-gate.models]]"))
    base = commands.base_config(load_config(moved), "HEAD", tmp_path)
    assert not isinstance(base, str) and base is not None and base.models[0].tolerance.reference == 1e-9
    _git(tmp_path, "rm", "-q", "--cached", "parity-gate.toml")
    _git(tmp_path, "commit", "-qm", "no config")
    assert commands.base_config(load_config(moved), "HEAD", tmp_path) is None  # new in the change


SWEEP = """[[sweeps]]
name = "acts"
op = "torch.nn.functional:gelu"
inputs = [{ name = "x", shape = [2, 8], dtype = "float32" }]
"""


def test_an_included_sweep_file_is_read_as_it_was_at_the_base(tmp_path):
    """A tolerance raised inside a sweep file the config includes is a loosening; a base whose config does
    not load here (its included file gone) is said, never read as nothing loosened."""
    including = 'include = ["sweeps/*.toml"]\n' + BASE
    _committed(tmp_path, {"parity-gate.toml": including, "sweeps/acts.toml": SWEEP})
    (tmp_path / "sweeps" / "acts.toml").write_text(SWEEP + "tolerance = { reference = 1e-2 }\n")
    cfg = load_config(tmp_path / "parity-gate.toml")
    base = commands.base_config(cfg, "HEAD", tmp_path)
    assert not isinstance(base, str) and base is not None
    (case,) = [m for m in base.models if m.sweep is not None]
    assert case.tolerance.reference == 1e-9
    (tmp_path / "parity-gate.toml").write_text(BASE)
    _git(tmp_path, "rm", "-qf", "sweeps/acts.toml")
    _git(tmp_path, "commit", "-qm", "sweep gone")  # the base's config includes a file it no longer has
    (tmp_path / "parity-gate.toml").write_text(LOOSE)
    unread = commands.base_config(load_config(tmp_path / "parity-gate.toml"), "HEAD", tmp_path)
    assert isinstance(unread, str) and "`sweeps/*.toml` matches no file" in unread


RENAMED = MODEL.replace("nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))",
                        "nn.Sequential(OrderedDict(a=nn.Linear(8, 16), g=nn.GELU(), out=nn.Linear(16, 4)))") \
    .replace("m[2].weight", "m.out.weight") \
    .replace("import torch\n", "from collections import OrderedDict\nimport torch\n")


def _rules(*layers: str, ceiling: str = "1") -> str:
    """Every float32 error above 1e-12 fails, but on the layers named (their own rules)."""
    rules = ", ".join(f'{{ layers = "{layer}", ceiling = {ceiling} }}' for layer in (*layers, "(model)"))
    return f"tolerance = {{ ceiling = 1e-12 }}\nlayer-tolerances = [{rules}]\n"


def test_a_layer_rule_renamed_with_its_module_is_no_loosening(project):
    """The base's rules for `0`, `1`, `2` and the change's for `a`, `g`, `out`: the same layers renamed, the
    same limits. The rules follow the rename, so nothing was loosened and nothing is said (matched by the
    new names alone, the base's 1e-12 would fail every layer); its twin, a rule loosened over a weight
    fault after the rename, is said."""
    (project / "renamed.py").write_text(RENAMED)
    now = BASE.replace("models:net", "renamed:net")
    base = load_config(project / "parity-gate.toml", BASE + _rules("0", "1", "2"))
    try:
        cfg = load_config(project / "parity-gate.toml", now + _rules("a", "g", "out"))
        report = commands.check(cfg, cfg.models, cfg.providers, base=base)
        assert report.verdict == "pass" and report.models[0].loosened is None, report.models[0].loosened
        (project / "scale.txt").write_text("1.001")
        cfg = load_config(project / "parity-gate.toml", LOOSE.replace("models:net", "renamed:net"))
        base = load_config(project / "parity-gate.toml", BASE)
        report = commands.check(cfg, cfg.models, cfg.providers, base=base)
        loosened = report.models[0].loosened
        assert report.verdict == "pass" and loosened is not None and loosened.first is not None
    finally:
        (project / "scale.txt").write_text("1.0")



def test_a_precision_the_change_drops_is_named(tmp_path):
    """torch-cpu in float32 and in bfloat16 at the base; the change keeps the bfloat16 run alone: the
    float32 check is gone, and said (a provider is its name and its precision). Twin: both kept, nothing."""
    both = BASE.replace('"torch-cpu",', '"torch-cpu", { name = "torch-cpu", precision = "bfloat16" },')
    (tmp_path / "models.py").write_text(MODEL)
    (tmp_path / "scale.txt").write_text("1.0")
    base = load_config(tmp_path / "parity-gate.toml", both)
    commands.update_baseline(base, base.models, base.providers)
    cpu_only = BASE.replace('"torch-cpu", ', "")
    for text, dropped in ((both.replace('"torch-cpu", ', "", 1), ("torch-cpu:float32",)), (both, None),
                          (cpu_only, ("torch-cpu:float32", "torch-cpu:bfloat16"))):
        cfg = load_config(tmp_path / "parity-gate.toml", text)
        report = commands.check(cfg, cfg.models, cfg.providers, base=base)
        loosened = report.models[0].loosened
        assert report.verdict == "pass" and (loosened and loosened.dropped) == dropped, text


def _reference(base) -> float:
    assert not isinstance(base, str) and base is not None, base
    (case,) = [m for m in base.models if m.sweep is not None] or base.models
    return case.tolerance.reference


def test_the_base_config_is_the_file_that_judged_there_with_every_file_it_names(tmp_path):
    """Read from the base's tree as the change's is read from disk, whatever the names: a sweep file
    included under another suffix, or from a folder beside the config's; a config named with --config;
    the pyproject table the search preferred at the base over a loose parity-gate.toml beside it. Twins:
    a change that loosens nothing reads as nothing (not as a base that does not load); a file outside the
    repository is never read for the base."""
    loose = "tolerance = { reference = 1e-2 }\n"
    included = 'include = ["../shared/*.cfg"]\n' + BASE
    table = "[tool.parity-gate]\n" + BASE.replace("[[models]]", "[[tool.parity-gate.models]]")
    _committed(tmp_path, {"gate/parity-gate.toml": included, "shared/acts.cfg": SWEEP, "ci/gate.conf": BASE,
                          "pyproject.toml": table, "parity-gate.toml": LOOSE})
    config = tmp_path / "gate" / "parity-gate.toml"
    (config).write_text(included + "# a comment\n")
    assert commands.base_config(load_config(config), "HEAD", config.parent) is None
    (tmp_path / "shared" / "acts.cfg").write_text(SWEEP + loose)
    assert _reference(commands.base_config(load_config(config), "HEAD", config.parent)) == 1e-9
    (tmp_path / "ci" / "gate.conf").write_text(LOOSE)
    assert _reference(commands.base_config(load_config(tmp_path / "ci" / "gate.conf"), "HEAD", None)) == 1e-9
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    standalone = load_config(tmp_path / "parity-gate.toml")
    assert _reference(commands.base_config(standalone, "HEAD", tmp_path)) == 1e-9
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "acts.toml").write_text(SWEEP)
    config.write_text(f'include = ["{outside}/*.toml"]\n' + BASE)
    _git(tmp_path, "commit", "-qam", "includes a file outside")
    unread = commands.base_config(load_config(config), "HEAD", config.parent)
    assert isinstance(unread, str) and "matches no file" in unread


def test_models_and_cases_the_change_drops_are_named(project):
    """A model's table removed and a sweep's case dropped from its values: nothing judges them, their
    baselines stay; said on the report (JSON, Markdown). Twin: the same configs unchanged say nothing."""
    sweep = '[[sweeps]]\nname = "act"\nmodule = "torch.nn.{act}"\nvars = {{ act = [{acts}] }}\n' \
            'inputs = [{{ name = "x", shape = [2, 8], dtype = "float32" }}]\n'
    twice = BASE + BASE.split("\n\n", 1)[1].replace('"net"', '"net2"')
    acts = sweep.format(act="{act}", acts='"ReLU", "GELU", "SiLU"')
    base = load_config(project / "parity-gate.toml", twice + "\n" + acts)
    cfg = load_config(project / "parity-gate.toml", BASE + "\n" + acts.replace('"GELU", ', ""))
    report = commands.check(cfg, cfg.models, cfg.providers, base=base)
    assert report.unchecked == ["net2", "act.gelu"] and report.to_dict()["unchecked"] == report.unchecked
    assert "⚠️ this change's config no longer checks `net2`, `act.gelu`, which the base's does" \
        in render_markdown(report)
    again = commands.check(base, base.models, base.providers, base=base)
    assert again.unchecked is None and "no longer checks" not in render_markdown(again)


def test_the_base_tree_is_read_as_the_disk_is(tmp_path):
    """Symlinks (a sweep folder, the config file itself, the repository reached through one) are followed
    in the base's tree as on disk; a dotfile beside the included sweeps is left out as `glob` leaves it;
    the search from a subfolder finds what it found at the base, not a config the change added there."""
    loose = "tolerance = { reference = 1e-2 }\n"
    repo = tmp_path / "repo"
    _committed(repo, {"ci/parity-gate.toml": 'include = ["sweeps/*/*.toml"]\n' + BASE,
                      "shared/acts.toml": SWEEP, "ci/sweeps/.draft.toml": SWEEP.replace("acts", "draft"),
                      "ci/sub/keep.txt": ""})
    (repo / "ci" / "sweeps" / "shared").symlink_to("../../shared")
    (repo / "parity-gate.toml").symlink_to("ci/parity-gate.toml")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "links")
    (tmp_path / "link").symlink_to(repo)
    config = tmp_path / "link" / "parity-gate.toml"
    assert commands.base_config(load_config(config), "HEAD", config.parent) is None  # unchanged: the same
    (repo / "shared" / "acts.toml").write_text(SWEEP + loose)
    assert _reference(commands.base_config(load_config(config), "HEAD", config.parent)) == 1e-9
    assert _reference(commands.base_config(load_config(config), "HEAD", None)) == 1e-9
    (repo / "ci" / "sub" / "parity-gate.toml").write_text(LOOSE)  # a config the change adds below
    assert _reference(commands.base_config(load_config(repo / "ci" / "sub" / "parity-gate.toml"), "HEAD",
                                           repo / "ci" / "sub")) == 1e-9


def test_a_renamed_config_a_foreign_file_name_and_a_link_the_change_moves(tmp_path):
    """--config's file renamed by the change is compared with what it was (git's rename detection); a
    file name that is not UTF-8 anywhere in the repository is no crash; a config made a link to its new
    place (its sweep files moved with it) reads the base's own files: the same config, nothing said."""
    loose = "tolerance = { reference = 1e-2 }\n"
    _committed(tmp_path, {"ci/a.cfg": BASE, "parity-gate.toml": 'include = ["sweeps/*.toml"]\n' + BASE,
                          "sweeps/acts.toml": SWEEP})
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "a foreign name")
    _git(tmp_path, "mv", "ci/a.cfg", "ci/b.cfg")
    (tmp_path / "ci" / "b.cfg").write_text(BASE + loose)
    _git(tmp_path, "commit", "-qam", "renamed")
    assert _reference(commands.base_config(load_config(tmp_path / "ci" / "b.cfg"), "HEAD~1", None)) == 1e-9
    _git(tmp_path, "mv", "parity-gate.toml", "sweeps", "ci")
    (tmp_path / "parity-gate.toml").symlink_to("ci/parity-gate.toml")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "a link to its new place")
    moved = load_config(tmp_path / "parity-gate.toml")
    base = commands.base_config(moved, "HEAD~1", tmp_path)
    assert not isinstance(base, str), base
    assert base is None or [m.name for m in base.models] == [m.name for m in moved.models]


def test_a_skip_the_change_adds_to_a_sweep_drops_that_provider_for_its_cases(tmp_path):
    """A sweep's `skip` the change adds keeps CPUExecutionProvider off one case: that case names it as
    dropped; the cases it does not match, and the same skip at the base, say nothing."""
    sweep = '[[sweeps]]\nname = "act"\nmodule = "torch.nn.{act}"\nvars = { act = ["ReLU", "SiLU"] }\n' \
            'inputs = [{ name = "x", shape = [2, 8], dtype = "float32" }]\n'
    skip = 'skip = [{ case = "act.silu", provider = "CPUExecutionProvider", reason = "flaky" }]\n'
    (tmp_path / "models.py").write_text(MODEL)
    (tmp_path / "scale.txt").write_text("1.0")
    base = load_config(tmp_path / "parity-gate.toml", BASE + "\n" + sweep)
    commands.update_baseline(base, base.models, base.providers)
    cfg = load_config(tmp_path / "parity-gate.toml", BASE + "\n" + sweep + skip)
    for judged_under, said in ((base, {"act.silu": ("CPUExecutionProvider",)}), (cfg, {})):
        report = commands.check(cfg, cfg.models, cfg.providers, base=judged_under)
        assert report.verdict == "pass"
        assert {m.name: m.loosened.dropped for m in report.models if m.loosened} == said
    # over every case: one line names them all (one mark per cause)
    every = load_config(tmp_path / "parity-gate.toml",
                        BASE + "\n" + sweep + skip.replace("act.silu", "act.*"))
    text = render_markdown(commands.check(every, every.models, every.providers, base=base))
    assert text.count("no longer checks `CPUExecutionProvider`") == 1
    assert "⚠️ `act.relu`, `act.silu`: this change's config no longer checks `CPUExecutionProvider`" in text
    # a provider the change adds and skips on a case: the base never checked it, nothing was loosened
    torch_only = load_config(tmp_path / "parity-gate.toml",
                             BASE.replace(', "CPUExecutionProvider"', "") + "\n" + sweep)
    report = commands.check(cfg, cfg.models, cfg.providers, base=torch_only)
    assert [m.loosened.dropped for m in report.models if m.loosened] == []


SLOW = """import torch
from torch import nn
from pathlib import Path


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(16, 4)
        self.register_buffer("big", torch.randn(256, 256) / 16)

    def forward(self, x):
        if (Path(__file__).parent / "slow.txt").read_text() == "1":  # the same values, ~100x the time
            z = self.big * (1 + 0.0 * x.mean())
            for _ in range(10):
                z = torch.tanh(z @ self.big)
            x = x + 0.0 * z.sum()
        return self.fc(x)


def net():
    return Net()
"""
TIMED = ('baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\nmax-slowdown = 3\n\n'
         '[[models]]\nname = "slow"\nfactory = "slow_models:net"\n'
         'inputs = [{ name = "x", shape = [4, 16] }]\n')
UNTIMED = TIMED.replace("max-slowdown = 3\n", "")


def test_a_slowdown_gate_the_change_removes_is_named_on_both_paths(tmp_path):
    """max-slowdown at the base, removed by the change that makes ONNX Runtime ~100x slower (the same
    values): `check` times for the base's gate and names where it fails; `report` over results collected
    under the change's config names the latency nothing timed. Twins: the gate kept fails; the gate removed
    with no slowdown, and no gate at the base, say nothing."""
    (tmp_path / "slow_models.py").write_text(SLOW)
    (tmp_path / "slow.txt").write_text("0")
    timed, untimed = (load_config(tmp_path / "parity-gate.toml", text) for text in (TIMED, UNTIMED))
    commands.update_baseline(timed, timed.models, timed.providers)
    (tmp_path / "slow.txt").write_text("1")
    assert commands.check(timed, timed.models, timed.providers).verdict == "regressed"
    loosened = commands.check(untimed, untimed.models, untimed.providers, base=timed).models[0].loosened
    assert loosened is not None and loosened.first is not None and str(loosened.first.check) == "latency"
    files = [tmp_path / "export", tmp_path / "cpu.zst"]
    commands.export_models(untimed, untimed.models, untimed.select_providers(["torch-cpu"]), files[0])
    commands.collect(files[0], untimed.select_providers(["CPUExecutionProvider"]), files[1])
    for base, dropped in ((timed, ("CPUExecutionProvider latency",)), (untimed, None)):
        report = commands.report_files(untimed, files, base=base)
        loosened = report.models[0].loosened or Loosened()
        assert report.verdict == "pass" and loosened.dropped == (dropped or ())
    (tmp_path / "slow.txt").write_text("0")
    report = commands.check(untimed, untimed.models, untimed.providers, base=timed)
    assert report.verdict == "pass" and report.models[0].loosened is None


RESTORE = ('baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
           '[[models]]\nname = "a"\nfactory = "restore_models:net"\n'
           'inputs = [{ name = "x", shape = [4, 16] }]\n')


def _recorded_linear(tmp_path) -> None:
    """A repository whose last commit holds model `a` (a Linear) and its recorded baseline."""
    model = "import torch\nfrom torch import nn\n\n\ndef net():\n    torch.manual_seed(0)\n" \
            "    return nn.Linear(16, 4)\n"
    _committed(tmp_path, {"restore_models.py": model, "parity-gate.toml": RESTORE})
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "recorded")


def test_a_baseline_file_the_change_deletes_or_damages_is_restored_from_the_base(tmp_path):
    """A change that deletes, or truncates, a model's baseline file leaves nothing to judge it: the step is
    to restore the file from the base (a new recording would take whatever the change did to the model),
    with the command that works once the change is committed. Twins: a model new in the change is recorded;
    a damaged file without --changed-since is restored from the checkout, as ever."""
    _recorded_linear(tmp_path)
    file = tmp_path / "baselines" / "a.msgpack.zst"
    recorded = file.read_bytes()

    def step(*since: str) -> dict:
        run_cli("check", *since, "--json", "r.json", cwd=tmp_path)
        model = json.loads((tmp_path / "r.json").read_text())["models"][0]
        said = [model["message"] or ""] + [p["reason"] or "" for p in model["providers"]]
        # no line beside the step says to record the file anew
        assert not since or not any("update-baseline" in line for line in said), said
        return model["next_step"]

    file.write_bytes(recorded[:200])
    assert step("--changed-since", "HEAD") == {"kind": "restore", "error_status": "BAD_BASELINE",
                                               "command": "git checkout HEAD -- baselines/a.msgpack.zst"}
    assert step()["kind"] == "bad-baseline"
    file.unlink()
    assert step("--changed-since", "HEAD") == {"kind": "restore",
                                               "command": "git checkout HEAD -- baselines/a.msgpack.zst"}
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "deleted")
    run_cli("check", "--changed-since", "HEAD", "--json", "r.json", cwd=tmp_path)
    model = json.loads((tmp_path / "r.json").read_text())["models"][0]
    assert model["next_step"]["kind"] == "no-baseline"  # not in the base either: a new recording
    assert "update-baseline" in model["message"]


def test_a_baseline_left_behind_by_a_moved_baseline_dir_is_moved_never_recorded_anew(tmp_path):
    """A change that renames `baseline-dir` and leaves the file where it was, with a weight fault: the step
    moves the file (`git mv`), never records the faulted model anew, and the check after the move fails on
    the fault."""
    model = "import torch\nfrom torch import nn\nfrom pathlib import Path\n\n\ndef net():\n" \
            "    torch.manual_seed(0)\n    m = nn.Linear(16, 4)\n    with torch.no_grad():\n" \
            "        m.weight.mul_(float((Path(__file__).parent / 'scale.txt').read_text()))\n    return m\n"
    _committed(tmp_path, {"restore_models.py": model, "scale.txt": "1.0", "parity-gate.toml": RESTORE})
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "recorded")
    (tmp_path / "parity-gate.toml").write_text(RESTORE.replace('"baselines"', '"baselines-v2"'))

    def check() -> tuple[int, dict]:
        rc = run_cli("check", "--changed-since", "HEAD", "--json", "r.json", cwd=tmp_path).returncode
        return rc, json.loads((tmp_path / "r.json").read_text())["models"][0]

    (tmp_path / "scale.txt").write_text("1.001")
    rc, model = check()
    move = "mkdir -p baselines-v2 && git mv baselines/a.msgpack.zst baselines-v2/a.msgpack.zst"
    assert rc == 1 and model["next_step"] == {"kind": "restore", "command": move}
    said = [model["message"]] + [p["reason"] or "" for p in model["providers"]]
    assert move in said[0] and not any("update-baseline" in line for line in said), said
    assert subprocess.run(move, shell=True, cwd=tmp_path).returncode == 0
    rc, model = check()
    assert rc == 1 and model["status"] == "regressed" and "moved_from" not in model


def test_a_baseline_dir_moved_with_its_file_passes_with_nothing_to_move(tmp_path):
    _recorded_linear(tmp_path)
    (tmp_path / "parity-gate.toml").write_text(RESTORE.replace('"baselines"', '"baselines-v2"'))
    _git(tmp_path, "mv", "baselines", "baselines-v2")
    rc = run_cli("check", "--changed-since", "HEAD", "--json", "r.json", cwd=tmp_path).returncode
    model = json.loads((tmp_path / "r.json").read_text())["models"][0]
    assert rc == 0 and model["status"] == "pass" and "moved_from" not in model


def test_a_model_renamed_with_its_baseline_is_judged_under_the_base_spec_of_its_old_name(project):
    """`net` renamed `encoder` (its baseline moved with it) in the same change as a raised tolerance that
    hides a fault: the base's spec is the one its baseline was recorded under, so the loosening is named.
    Twin: the rename alone, with no fault, says nothing."""
    moved = project / "baselines" / "encoder.msgpack.zst"
    moved.write_bytes((project / "baselines" / "net.msgpack.zst").read_bytes())
    try:
        for scale, loosened in (("1.001", True), ("1.0", False)):
            report, model = _check(project, LOOSE.replace('name = "net"', 'name = "encoder"'), scale)
            assert report.verdict == "pass" and (model.loosened is not None) is loosened, model.loosened
            assert not loosened or model.loosened.first.layer == "2"
    finally:
        moved.unlink()


RMS = """import torch
from torch import nn
from pathlib import Path


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(16))

    def forward(self, x):  # computed in float32 on purpose, as Llama's RMSNorm is
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.weight


def net():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), Norm(), nn.Linear(16, 4))
    with torch.no_grad():
        m[2].weight.mul_(float((Path(__file__).parent / "scale.txt").read_text()))
    return m
"""


def test_a_part_of_the_run_the_change_turns_off_is_named_never_taken_silently(tmp_path):
    """`reference-promotion = false` leaves the model's float32 cast in the reference, whose limits then
    follow float32: a 1e-6 fault after it passes, and the change must say what it turned off; dropping
    `gradients = true` stops checking every gradient layer. Both change the run itself, which judging it
    again under the base's limits cannot see. Twins: the fault under the base's config fails; the base's
    own config says nothing; a switch the base had off and the change turns on is no loosening."""
    (tmp_path / "rms_models.py").write_text(RMS)  # a module name of its own: modules stay imported
    (tmp_path / "scale.txt").write_text("1.0")
    rms = BASE.replace('"models:net"', '"rms_models:net"')
    on = rms.replace('dtype = "float32" }]\n', 'dtype = "float32" }]\ngradients = true\n')
    base = load_config(tmp_path / "parity-gate.toml", on)
    commands.update_baseline(base, base.models, base.providers)
    (tmp_path / "scale.txt").write_text("1.000001")
    report = commands.check(base, base.models, base.providers, base=base)
    assert report.verdict == "regressed" and report.models[0].loosened is None
    unpromoted = on.replace("gradients = true\n", "gradients = true\nreference-promotion = false\n")
    neither = rms.replace('dtype = "float32" }]\n', 'dtype = "float32" }]\nreference-promotion = false\n')
    # with neither, the fault passes (the reference computes in float32 after the cast): said on the model
    for text, scale, off in ((unpromoted, "1.0", ("reference-promotion",)), (rms, "1.0", ("gradients",)),
                             (neither, "1.000001", ("gradients", "reference-promotion"))):
        (tmp_path / "scale.txt").write_text(scale)
        cfg = load_config(tmp_path / "parity-gate.toml", text)
        report = commands.check(cfg, cfg.models, cfg.providers, base=base)
        loosened = report.models[0].loosened
        assert report.verdict == "pass" and loosened is not None and loosened.off == off, (text, loosened)
        said = f"this change's config turns off {', '.join(f'`{k}`' for k in off)}, which the base's turns on"
        assert said in render_markdown(report)
        assert Loosened.from_dict(Obj(loosened.to_dict(), "t")).off == off
    (tmp_path / "scale.txt").write_text("1.0")
    plain = load_config(tmp_path / "parity-gate.toml", rms)
    report = commands.check(base, base.models, base.providers, base=plain)
    assert report.models[0].loosened is None  # gradients turned on: more checked, nothing loosened


def test_a_model_the_change_runs_as_a_case_of_the_same_inputs_is_still_checked(tmp_path):
    """`batch-sizes = [2]` added to `net`, declared at batch 2: the same check, under the case's name
    `net.b2`, never "no longer checks `net`". Twin: `batch-sizes = [4]` drops the batch-2 check: named."""
    (tmp_path / "models.py").write_text(MODEL)
    base = load_config(tmp_path / "parity-gate.toml", BASE)
    for sizes, dropped in (("[2]", None), ("[4]", ["net"]), ("[2, 4]", None)):
        text = BASE.replace('dtype = "float32" }]\n', f'dtype = "float32" }}]\nbatch-sizes = {sizes}\n')
        assert loosened_unchecked(load_config(tmp_path / "parity-gate.toml", text), base) == dropped, sizes

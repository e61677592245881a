"""``parity-gate validate`` answers what ``check`` would refuse, without building a model: a factory
that does not import, and declared inputs other than those the baseline was recorded for."""

from __future__ import annotations

import shutil

from tests.conftest import run_cli
from tests.support.projects import examples_project

DECLARED = 'inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]'


def test_the_committed_examples_validate_against_their_baselines(tmp_path):
    examples_project(tmp_path, baselines=True)
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tiny-cnn: 1 input(s), 6,144 bytes, digest " in proc.stdout and ", as its baseline" in proc.stdout


def test_a_configured_model_without_a_baseline_fails_validate_with_the_command_that_records_it(tmp_path):
    examples_project(tmp_path, baselines=True)
    (tmp_path / "baselines" / "tiny-cnn.msgpack.zst").unlink()
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "tiny-cnn: 1 input(s), 6,144 bytes, digest " in proc.stdout and ", no baseline" in proc.stdout
    assert ("no baseline: tiny-cnn (baselines/tiny-cnn.msgpack.zst): record it with "
            "`parity-gate update-baseline --model tiny-cnn`") in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == ("MISSING BASELINE | tiny-cnn: 1 case without a baseline; `check` "
                                                     "fails until it is recorded")
    assert "VALID" not in proc.stdout.replace("MISSING", "")


def test_an_input_dtype_other_than_the_baselines_is_refused(tmp_path):
    path = examples_project(tmp_path, baselines=True)
    path.write_text(path.read_text().replace(DECLARED, DECLARED.replace("float32", "float64")))
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "VALID" not in proc.stdout
    assert proc.stderr.strip() == (
        "error: model `tiny-cnn`: its declared inputs are not those baseline `baselines/tiny-cnn.msgpack.zst` was "
        "recorded for (input `x`: dtype float32 -> float64); `check` will refuse it: re-create it with "
        "`parity-gate update-baseline --model tiny-cnn`")


def test_another_models_baseline_is_named_as_such_not_as_other_inputs(tmp_path):
    """`tiny-cnn`'s file replaced by `tiny-transformer`'s: validate says what check will refuse it for, and
    goes on: `tiny-transformer`'s truncated file is named on a line of its own, as `check` would."""
    path = examples_project(tmp_path, baselines=True)
    shutil.copy(path.parent / "baselines" / "tiny-transformer.msgpack.zst",
                path.parent / "baselines" / "tiny-cnn.msgpack.zst")
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == (
        "error: model `tiny-cnn`: baseline `baselines/tiny-cnn.msgpack.zst`: holds model "
        "`tiny-transformer`, not `tiny-cnn`; `check` will refuse it: restore it with "
        "`git checkout -- baselines/tiny-cnn.msgpack.zst`")
    other = path.parent / "baselines" / "tiny-transformer.msgpack.zst"
    other.write_bytes(other.read_bytes()[:100])
    proc = run_cli("validate", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 2 and "VALID" not in proc.stdout, proc.stdout + proc.stderr
    assert lines[1].startswith("error: model `tiny-transformer`: baseline "
                               "`baselines/tiny-transformer.msgpack.zst`: ")
    assert lines[1].endswith("restore it with `git checkout -- baselines/tiny-transformer.msgpack.zst`")


def test_a_factory_that_does_not_import_is_refused_by_its_key(tmp_path):
    path = examples_project(tmp_path)
    path.write_text(path.read_text().replace('"examples.zoo:tiny_cnn"', '"examples.zooo:tiny_cnn"'))
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "VALID" not in proc.stdout
    assert "`tool.parity-gate.models[1].factory`: cannot import `examples.zooo` (ModuleNotFoundError" in proc.stderr
    path.write_text(path.read_text().replace('"examples.zooo:tiny_cnn"', '"examples.zoo:tiny_cnnn"'))
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "module `examples.zoo` has no attribute `tiny_cnnn`" in proc.stderr
    # a name that is not a callable: a config error naming the key, on validate and check alike
    path.write_text(path.read_text().replace('"examples.zoo:tiny_cnnn"', '"examples.zoo:__name__"'))
    for command in ("validate", "check"):
        proc = run_cli(command, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "factory`: `examples.zoo:__name__` is not callable (it is a `str`)" in proc.stderr


def test_a_baseline_that_records_its_inputs_names_the_one_that_changed_and_how(tmp_path):
    path = examples_project(tmp_path)
    path.write_text(path.read_text().split("[[tool.parity-gate.models]]\nname = \"tiny-transformer\"")[0])
    recorded = run_cli("update-baseline", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    text = path.read_text()
    for edit, how in [(DECLARED.replace("float32", "float64"), "(input `x`: dtype float32 -> float64)"),
                      (DECLARED.replace("16, 16", "16, 32"), "(input `x`: shape [2, 3, 16, 16] -> [2, 3, 16, 32])"),
                      (DECLARED.replace(" }]", ", low = 0.0 }]"),
                       "(input `x`: other values, same dtype and shape (its seed or range changed))"),
                      (DECLARED.replace('"x"', '"image"'), "(input `image` is new; input `x` is gone)")]:
        path.write_text(text.replace(DECLARED, edit))
        proc = run_cli("validate", cwd=tmp_path)
        assert proc.returncode == 2 and how in proc.stderr, (edit, proc.stderr)
    path.write_text(text.replace(DECLARED, DECLARED.replace("float32", "float64")))
    proc = run_cli("check", cwd=tmp_path)  # check refuses it the same way: that model fails, exit 2
    said = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "(input `x`: dtype float32 -> float64)" in said, said


def test_a_command_run_in_a_subfolder_finds_the_config_above_it(tmp_path):
    examples_project(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples" / "deep").mkdir()
    proc = run_cli("list", cwd=tmp_path / "examples" / "deep")
    assert proc.returncode == 0, proc.stderr
    assert "tiny-cnn  (tiny-cnn)  export #0" in proc.stdout

"""gate.commands.baseline_diff and the comment's block for a pull request that rewrites baselines:
what moved in each file, one line per layer, from real git; only files the pull request's own list
names are shown, in a fence nothing in a file can close."""

from __future__ import annotations

import struct
import subprocess

from gate.commands import changed_baselines, dropped_baselines, loosened_baselines
from gate.commands.baseline_diff import MAX_LAYERS
from gate.config import load_config
from gate.core.fields import Obj
from gate.formats.baseline import write_baseline
from gate.render.notices import baseline_block
from gate.verdict.types import ModelVerdict, Report
from tests.support.baseline_docs import make_document
from tests.support.github_text import acted_on

BASELINE = "baselines/tiny.msgpack.zst"
CONFIG = '[tool.parity-gate]\n[[tool.parity-gate.models]]\nname = "tiny"\nfactory = "m:f"\n' \
         'inputs = [{ name = "x", shape = [2, 3] }]\n'


def git(root, *args):
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)


def scaled(fp: dict, factor: float) -> None:
    for key in ("min", "max", "sum", "sumabs"):
        fp[key] *= factor
    fp["sumsq"] *= factor * factor
    fp["q"] = [v * factor for v in fp["q"]]
    sketch = [x * factor for (x,) in struct.iter_unpack("<d", fp["sketch"])]
    fp["sketch"] = struct.pack(f"<{len(sketch)}d", *sketch)


def committed(tmp_path, layers: int):
    """A repository whose base commit holds the baseline of model `tiny` (``layers`` layers): its path and
    document."""
    git(tmp_path, "init", "-q")
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    path = tmp_path / "baselines" / "tiny.msgpack.zst"
    path.parent.mkdir()
    doc = make_document(layers, seed=1)
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return path, doc


def test_a_changed_baseline_reads_as_what_moved_then_the_layers_that_moved(tmp_path):
    path, doc = committed(tmp_path, 30)
    for layer in doc["layers"][3:]:  # a change at layer3 moves every layer after it: values 1.001x
        scaled(layer["fp"], 1.001)
    scaled(doc["layers"][1]["fp"], 1 + 1e-15)  # noise: not shown
    write_baseline(path, doc)
    write_baseline(tmp_path / "baselines" / "new.msgpack.zst", make_document(2, seed=3, model="new"))
    git(tmp_path, "add", "-A")
    paths, diffs = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")
    assert paths == ["baselines/new.msgpack.zst", "baselines/tiny.msgpack.zst"]
    added = diffs["baselines/new.msgpack.zst"].splitlines()
    assert added[0].startswith("new baseline: 2 layers") and all(line.startswith("+") for line in added[1:])
    lines = diffs["baselines/tiny.msgpack.zst"].splitlines()
    assert lines[0].startswith("reference moved on 27 layers (first: layer3 by ") and "largest: " in lines[0]
    assert "graph, weights and inputs the same" in lines[0]
    shown = [line for line in lines if line.startswith(("-layer ", "+layer "))]
    assert [line.split()[1] for line in shown[:4]] == ["layer3", "layer3", "layer4", "layer4"]
    assert shown[0].startswith("-") and shown[1].startswith("+") and len(shown) == 2 * MAX_LAYERS
    more = 27 - MAX_LAYERS
    assert lines[-1] == f"… {more} more layers changed: git diff HEAD -- baselines/tiny.msgpack.zst"
    assert not any(" layer1 " in line for line in lines)


def test_the_comment_shows_the_diffs_of_the_files_the_pull_request_lists_and_nothing_else():
    report = Report("pass", [ModelVerdict("tiny")], baseline_changes=["b/tiny.msgpack.zst"],
                    baseline_diffs={"b/tiny.msgpack.zst": "-layer fc mean=1\n+layer fc mean=2 ``` @victim",
                                    "b/forged.msgpack.zst": "+layer everything is fine"})
    block = baseline_block(report)
    assert "<details><summary>What moved in the baseline files" in block
    assert "````diff\n-layer fc mean=1\n+layer fc mean=2 ``` @victim\n````" in block  # a fence the text cannot close
    assert "forged" not in block and "everything is fine" not in block
    assert acted_on(block).active == []
    # each block named by its file, as git diff names each: two files re-recorded read apart
    diffs = {"b/a.msgpack.zst": "", "b/b.msgpack.zst": "no recorded value moved"}
    two = Report("pass", [ModelVerdict("a"), ModelVerdict("b")], baseline_changes=list(diffs),
                 baseline_diffs=diffs)
    assert "`b/b.msgpack.zst`:\n\n```diff\nno recorded value moved\n```" in baseline_block(two)
    assert "<details>" not in baseline_block(Report("pass", [], baseline_changes=["b/tiny.msgpack.zst"]))


def test_the_diffs_travel_in_the_json_report():
    report = Report("pass", [], baseline_changes=["b/t.msgpack.zst"], baseline_diffs={"b/t.msgpack.zst": "+x"})
    from gate.core.fields import Obj

    assert Report.from_dict(Obj(report.to_dict(), "r.json")).baseline_diffs == {"b/t.msgpack.zst": "+x"}


def test_a_large_new_baseline_never_hides_another_files_summary(tmp_path):
    """A decoy: a new model with many long layer names sorts before the model whose weights moved. Each file
    gets its share of the diff's budget, in the report and in the comment: the moved one's summary shows."""
    path, doc = committed(tmp_path, 8)
    for layer in doc["layers"][3:]:
        scaled(layer["fp"], 1.001)
    write_baseline(path, doc)
    decoy = make_document(40, seed=3, model="aaa")
    names = {layer["name"]: f"{'x' * 700}{i}" for i, layer in enumerate(decoy["layers"][:-1])}  # (model) kept
    for layer in decoy["layers"]:
        layer["name"] = names.get(layer["name"], layer["name"])
    for entries in decoy["providers"].values():
        for entry in entries.values():
            entry["layers"] = {names.get(k, k): v for k, v in entry["layers"].items()}
    write_baseline(tmp_path / "baselines" / "aaa.msgpack.zst", decoy)
    git(tmp_path, "add", "-A")
    paths, diffs = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")
    assert diffs["baselines/tiny.msgpack.zst"].startswith("reference moved on 5 layers")
    assert diffs["baselines/aaa.msgpack.zst"].endswith("… cut: git diff HEAD -- baselines/aaa.msgpack.zst")
    report = Report("pass", [ModelVerdict("tiny", "pass")], baseline_changes=paths, baseline_diffs=diffs)
    block = baseline_block(report)
    assert "reference moved on 5 layers" in block and block.count("```diff") == 2


def test_a_baseline_whose_folder_moved_is_compared_with_the_numbers_it_had(tmp_path):
    """A change that moves `baseline-dir` and records there, the old file left behind: the diff is against
    that file's numbers (what moved, and where it was), never a "new baseline" that hides the move."""
    path, doc = committed(tmp_path, 8)
    for layer in doc["layers"][3:]:
        scaled(layer["fp"], 1.001)
    moved = tmp_path / "gate-baselines" / "tiny.msgpack.zst"
    moved.parent.mkdir()
    write_baseline(moved, doc)
    git(tmp_path, "add", "-A")
    _, diffs = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")
    lines = diffs["gate-baselines/tiny.msgpack.zst"].splitlines()
    assert lines[0] == "moved from baselines/tiny.msgpack.zst"
    assert lines[1].startswith("reference moved on 5 layers")


def test_a_file_the_change_damages_reads_as_its_error_named_in_the_repository(tmp_path):
    """Truncated in the change: one line, the reader's error with the file as the repository names it,
    never the old file line by line nor the runner's path. Twin: the file as committed changes nothing."""
    path, _ = committed(tmp_path, 3)
    recorded = path.read_bytes()
    path.write_bytes(recorded[:40])
    _, diffs = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")
    (text,) = diffs.values()
    assert text.startswith("unreadable: baseline `baselines/tiny.msgpack.zst`: ") and "\n" not in text
    assert str(tmp_path) not in text
    path.write_bytes(recorded)
    assert changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD") == ([], {})


def digests_committed(tmp_path, names: list[str]):
    """``committed`` with the tensors ``names`` recorded (digests ``a…``, distinct sums): its path, document,
    sums and config."""
    path, doc = committed(tmp_path, 4)
    sums = {n: f"6.6.{i + 1:016x}{i + 2:016x}" for i, n in enumerate(names)}
    doc["meta"].update(weights_digest="a" * 64, tensor_digests={n: "a" * 16 for n in names}, tensor_sums=sums)
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "digests")
    return path, doc, sums, load_config(tmp_path / "pyproject.toml")


def test_weights_that_changed_names_and_not_values_read_as_renamed(tmp_path):
    """A re-record after a rename only: the weights digest moved (names are part of it), the values did not
    (their sums), so the diff says the weights were renamed, never that they changed. Twin: one value
    changed beside the rename reads as weights changed."""
    path, doc = committed(tmp_path, 4)
    sums = {"fc.weight": f"6.6.{1:016x}{2:016x}", "fc.bias": f"2.2.{3:016x}{4:016x}"}

    def recorded(meta: dict, names: dict[str, str], digest: str) -> None:
        meta.update(weights_digest=digest * 64, tensor_digests={n: digest * 16 for n in names},
                    tensor_sums={n: names[n] for n in names})

    recorded(doc["meta"], sums, "a")
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "digests")
    renamed = {f"head.{n.split('.')[1]}": v for n, v in sums.items()}
    for names, said in ((renamed, "weights renamed, their values the same"),
                        ({**renamed, "head.bias": f"2.2.{3:016x}{5:016x}"}, "weights changed")):
        recorded(doc["meta"], names, "b")
        write_baseline(path, doc)
        git(tmp_path, "add", "-A")
        (line,) = [x for x in changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")[1][
            "baselines/tiny.msgpack.zst"].splitlines() if x.startswith("no recorded value moved")]
        assert said in line and ("weights changed" in line) is (said == "weights changed"), line


def test_a_whole_digest_of_another_rule_with_the_same_tensors_reads_as_no_weight_change(tmp_path):
    """A re-record by a parity-gate whose whole weights digest is of another rule (``weights.RULE``): every
    tensor's digest the same, so the diff says nothing of the weights. Twin: one tensor's digest moved beside
    it reads as that weight changed."""
    names = ["fc.weight", "fc.bias"]
    path, doc, sums, cfg = digests_committed(tmp_path, names)
    moved = {**sums, "fc.weight": sums["fc.weight"][:-1] + "f"}
    for digests, values, said in (({n: "a" * 16 for n in names}, sums, None),
                                  ({"fc.weight": "b" * 16, "fc.bias": "a" * 16}, moved,
                                   "weights changed (tensor `fc.weight`)")):
        doc["meta"].update(weights_digest="c" * 64, tensor_digests=digests, tensor_sums=values)
        write_baseline(path, doc)
        git(tmp_path, "add", "-A")
        summary = changed_baselines(cfg, "HEAD")[1][BASELINE].splitlines()[0]  # then the file's own lines
        assert summary == "no change" if said is None else said in summary, summary


def test_a_model_recorded_again_under_a_new_name_is_compared_with_the_numbers_it_had(tmp_path):
    """`tiny` renamed `small` (or run as a case) and recorded again, its old file deleted or left behind:
    the new file records the same inputs and layers as the old, so its diff is against the old numbers (a
    fault recorded in the same change shows as the reference moving), never a "new baseline". Twin: a new
    model on other inputs, beside the same deleted file, is a new baseline."""
    path, doc = committed(tmp_path, 8)
    for layer in doc["layers"][3:]:
        scaled(layer["fp"], 1.001)
    (tmp_path / "pyproject.toml").write_text(CONFIG.replace('"tiny"', '"small"'))
    for keep_old in (False, True):
        if not keep_old:
            path.unlink()
        write_baseline(tmp_path / "baselines" / "small.msgpack.zst", {**doc, "model": "small"})
        git(tmp_path, "add", "-A")
        _, diffs = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")
        lines = diffs["baselines/small.msgpack.zst"].splitlines()
        assert lines[0] == "moved from baselines/tiny.msgpack.zst", (keep_old, lines)
        assert lines[1].startswith("reference moved on 5 layers"), lines
        git(tmp_path, "checkout", "-q", "HEAD", "--", "baselines/tiny.msgpack.zst")
    other = make_document(8, seed=7, model="small")
    path.unlink()
    write_baseline(tmp_path / "baselines" / "small.msgpack.zst", other)
    git(tmp_path, "add", "-A")
    _, diffs = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")
    assert diffs["baselines/small.msgpack.zst"].startswith("new baseline: 8 layers")


def test_a_rewrite_that_loosens_limits_is_said_before_the_diffs_and_travels_in_the_report(tmp_path):
    """A pull request that writes `noise` into each layer of the committed baseline (the fingerprints
    untouched) lets a fault pass by 4x that noise: the comment's leading block says the file loosened its
    limits, not only the collapsed diff. Twins: a re-record that only moves numbers loosens nothing; a file
    the pull request does not list is never named (the report may be a fork's); merged legs keep it."""
    path, doc = committed(tmp_path, 8)
    for layer in doc["layers"][3:]:
        scaled(layer["fp"], 1.001)
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    cfg = load_config(tmp_path / "pyproject.toml")
    assert loosened_baselines(cfg, "HEAD", ["baselines/tiny.msgpack.zst"]) is None
    for layer in doc["layers"]:
        layer["noise"] = 1e-3
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    assert loosened_baselines(cfg, "HEAD", ["baselines/tiny.msgpack.zst"]) == ["baselines/tiny.msgpack.zst"]
    report = Report("pass", [ModelVerdict("tiny")], baseline_changes=["baselines/tiny.msgpack.zst"],
                    baseline_loosened=["baselines/tiny.msgpack.zst", "baselines/other.msgpack.zst"])
    block = baseline_block(report)
    assert "> ⚠️ **Limits loosened** in `baselines/tiny.msgpack.zst`: its checks now pass by more" in block
    assert "other" not in block
    plain = Report("pass", [], baseline_changes=["baselines/t.msgpack.zst"])
    assert "Limits loosened" not in baseline_block(plain)
    again = Report.from_dict(Obj(report.to_dict(), "r.json"))
    assert again.baseline_loosened == report.baseline_loosened


def test_the_block_says_judged_against_the_rewritten_files_only_of_the_models_that_were():
    """A deleted or damaged file judged nothing: its model is listed as changed, never as judged."""
    from gate.core.runs import RunError
    from gate.core.status import ErrorStatus, ModelStatus

    judged = ModelVerdict("a", ModelStatus.PASS, baseline_path="b/a.msgpack.zst")
    damaged = ModelVerdict("c", ModelStatus.ERROR, RunError(ErrorStatus.BAD_BASELINE, "truncated"),
                           baseline_path="b/c.msgpack.zst")
    files = ["b/a.msgpack.zst", "b/c.msgpack.zst"]
    block = baseline_block(Report("error", [judged, damaged], baseline_changes=files))
    assert "> `a` was judged against the baselines this pull request writes" in block
    assert "`c` was" not in block and "These models" not in block
    assert "These models were judged" in baseline_block(Report("pass", [judged], baseline_changes=files[:1]))
    assert "judged" not in baseline_block(Report("error", [damaged], baseline_changes=files[1:]))


def test_a_layer_renamed_with_its_values_is_said_once_and_never_hides_a_layer_that_moved(tmp_path):
    """Layers whose values moved to other names (two swapped, one renamed, one whose container class changed
    too) are the summary's renames, not lines of the diff nor "reference moved ... by inf"; what moved is
    listed, and counted alone. Twin: a swapped layer whose values also moved is a layer added, its old
    values one removed."""
    path, doc = committed(tmp_path, 8)
    layers = doc["layers"]
    layers[1]["fp"], layers[2]["fp"] = layers[2]["fp"], layers[1]["fp"]
    layers[4]["name"], layers[5]["type"], layers[5]["name"] = "trunk.4", "FFN", "ffn"
    for entry in doc["providers"]["CPUExecutionProvider"].values():
        rows = entry["layers"]
        entry["layers"] = {{"layer4": "trunk.4", "layer5": "ffn"}.get(k, k): v for k, v in rows.items()}
    scaled(layers[6]["fp"], 1.001)
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    lines = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")[1][BASELINE]
    lines = lines.splitlines()
    assert lines[0] == "layers renamed: 4 (first: layer2 -> layer1), values the same"
    assert lines[1].startswith("reference moved on 1 layer (first: layer6 by ")
    shown = [line.split()[:2] for line in lines if line.startswith(("-layer ", "+layer "))]
    assert shown == [["-layer", "layer6"], ["+layer", "layer6"]]
    scaled(layers[1]["fp"], 1.001)  # twin: layer1 holds layer2's values no more
    write_baseline(path, doc)
    lines = changed_baselines(load_config(tmp_path / "pyproject.toml"), "HEAD")[1][BASELINE]
    assert lines.splitlines()[0] == "layers renamed: 3 (first: layer1 -> layer2), values the same"
    assert "layers added: 1 (first: layer1)\nlayers removed: 1 (first: layer2)" in lines
    assert "+layer layer1 " in lines and "-layer layer2 " in lines


def test_a_deleted_baseline_of_a_model_the_config_dropped_reads_as_one_line_and_still_counts(tmp_path):
    """`tiny` removed from the config and its file deleted: the block says so in one line, with no dump of
    the old file, and the file stays among the changes (approval counts it). Twin: the file of a model the
    config still checks, deleted, keeps its diff ("baseline deleted") and its restore handling."""
    path, _ = committed(tmp_path, 4)
    path.unlink()
    for config, dropped in ((CONFIG.replace('"tiny"', '"other"'), True), (CONFIG, False)):
        (tmp_path / "pyproject.toml").write_text(config)
        cfg = load_config(tmp_path / "pyproject.toml")
        paths, diffs = changed_baselines(cfg, "HEAD")
        assert paths == [BASELINE]
        assert dropped_baselines(cfg, paths) == ([BASELINE] if dropped else [])
        report = Report("pass", [], baseline_changes=paths, baseline_diffs=diffs or None,
                        baseline_dropped=dropped_baselines(cfg, paths) or None)
        block = baseline_block(report)
        said = (f"> **This pull request deletes the baseline of** `tiny` (`{BASELINE}`), which the config no "
                "longer checks.")
        assert (said in block) is dropped, block
        assert ("changes baselines" in block) is not dropped and ("```diff" in block) is not dropped
        assert diffs.get(BASELINE, "").startswith("baseline deleted") is not dropped
        assert Report.from_dict(Obj(report.to_dict(), "r.json")).baseline_dropped == report.baseline_dropped


def test_a_baseline_no_model_owns_left_in_place_is_said_once_in_the_comment(tmp_path, monkeypatch):
    """The console warns of a file no configured model owns; the comment says it too, once. Twin: a config
    that owns every file says nothing of it."""
    from gate.commands.judging import judge
    from gate.render import render_markdown

    committed(tmp_path, 4)
    monkeypatch.chdir(tmp_path)
    for config, left in ((CONFIG.replace('"tiny"', '"other"'), True), (CONFIG, False)):
        (tmp_path / "pyproject.toml").write_text(config)
        report = judge(load_config(tmp_path / "pyproject.toml"), [])
        assert report.unowned == ([BASELINE] if left else None)
        text = render_markdown(Report.from_dict(Obj(report.to_dict(), "r.json")))
        assert text.count("no model in the config owns this baseline") == (1 if left else 0), text


def test_weights_whose_values_changed_are_named_in_the_diff(tmp_path):
    """A re-record after a weight fault names the tensors whose values changed (three, then a count), so a
    reviewer sees which weights a "reference moved" came from. Twin: a rename alone names none."""
    names = ["fc.weight", "fc.bias", "head.weight", "head.bias", "out.weight"]
    path, doc, sums, cfg = digests_committed(tmp_path, names)
    many = "weights changed (tensors `fc.bias`, `fc.weight`, `head.bias` and 2 more)"
    for changed, said in ((names[:1], "weights changed (tensor `fc.weight`), graph and inputs the same"),
                          (names, many)):
        digests = {n: ("b" if n in changed else "a") * 16 for n in names}
        values = {n: sums[n][:-1] + ("f" if n in changed else sums[n][-1]) for n in names}
        doc["meta"].update(weights_digest="b" * 64, tensor_digests=digests, tensor_sums=values)
        write_baseline(path, doc)
        git(tmp_path, "add", "-A")
        assert said in changed_baselines(cfg, "HEAD")[1][BASELINE], said
    renamed = {f"x.{n}": v for n, v in sums.items()}
    doc["meta"].update(tensor_digests={n: "a" * 16 for n in renamed}, tensor_sums=renamed)
    write_baseline(path, doc)
    git(tmp_path, "add", "-A")
    text = changed_baselines(cfg, "HEAD")[1][BASELINE]
    assert "weights renamed, their values the same" in text and "tensor" not in text, text

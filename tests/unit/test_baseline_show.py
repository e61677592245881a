"""The text form of a baseline: stable, one layer per line, and usable as a git textconv driver."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

from gate.formats.baseline import encode_baseline, write_baseline
from gate.formats.baseline.show import render_file, render_text
from tests.support import tools
from tests.support.baseline_docs import make_document

ROOT = Path(__file__).resolve().parents[2]


def test_render_is_deterministic_and_has_one_line_per_layer(tmp_path):
    doc = make_document(
        5,
        providers={"CPUExecutionProvider": {"cpu": "float32"}, "CUDAExecutionProvider": {"sm90": "float16"}},
        folded=["layer2"],
    )
    text = render_text(doc, full=True)
    reordered = dict(doc, providers=dict(reversed(list(doc["providers"].items()))))
    assert text == render_text(reordered, full=True)
    lines = text.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("layer ")] == [x["name"] for x in doc["layers"]]
    assert sum(ln.startswith("provider-layer CPUExecutionProvider cpu ") for ln in lines) == 5
    assert "provider-layer CUDAExecutionProvider sm90 layer2 status=folded err=- -" in lines
    path = tmp_path / "m.msgpack.zst"
    write_baseline(path, doc)
    assert render_file(path, full=True) == text
    assert str(tmp_path) not in text  # no paths, no timestamps: the text is a function of the document


def test_layer_line_has_key_stats():
    doc = make_document(2)
    line = next(ln for ln in render_text(doc, full=True).splitlines() if ln.startswith("layer layer0 "))
    fp = doc["layers"][0]["fp"]
    for token in (
        "type=Linear",
        "float64[2x3]",
        f"min={fp['min']!r}",
        f"max={fp['max']!r}",
        "mean=",
        "std=",
        "l2=",
        "nan=0",
        "posinf=0",
        "neginf=0",
        "zero=0",
        "q=",
        "sketch=",
    ):
        assert token in line


def test_hostile_names_stay_on_one_line():
    doc = make_document(2)
    doc["layers"][0]["name"] = "evil\nlayer (model) \x1b[2J"
    doc["providers"] = {}
    text = render_text(doc)
    assert len(text.splitlines()) == len(render_text(make_document(2, providers=())).splitlines())
    assert '"evil\\nlayer (model) \\x1b[2J"' in text
    assert "\x1b" not in text


def _moved(doc: dict, layer: int, rel: float) -> dict:
    """``doc`` with every number of one reference layer moved by ``rel`` of the layer's scale."""
    import copy
    import math
    import struct

    out = copy.deepcopy(doc)
    fp = out["layers"][layer]["fp"]
    rms = math.sqrt(fp["sumsq"] / fp["count"])
    for key in ("min", "max", "sum", "sumabs"):
        fp[key] += rel * rms * (fp["count"] if key in ("sum", "sumabs") else 1)
    fp["sumsq"] *= 1 + rel
    fp["q"] = [v + rel * rms for v in fp["q"]]
    fp["sketch"] = struct.pack(f"<{len(fp['sketch']) // 8}d", *(x + rel * rms for (x,) in
                                                                struct.iter_unpack("<d", fp["sketch"])))
    return out


def test_compact_text_is_the_same_within_the_reference_noise_and_differs_beyond_it():
    doc = make_document(6, providers={"CPUExecutionProvider": {"cpu": "float32"}}, folded=["layer1"])
    text = render_text(doc).splitlines()
    for rel in (1e-15, -1e-14):  # float64 across CPUs: ~1e-16
        assert render_text(_moved(doc, 2, rel)).splitlines() == text
    for rel in (1e-8, -1e-6):  # past the float64 reference's noise (1e-10)
        moved = render_text(_moved(doc, 2, rel)).splitlines()
        assert [i for i, (a, b) in enumerate(zip(text, moved, strict=True)) if a != b] == \
            [text.index(next(ln for ln in text if ln.startswith("layer layer2 ")))]
    # A layer computed in float32 rounds at float32's noise: 1e-8 of its scale is noise there.
    doc["layers"][2]["reached"] = "float32"
    assert render_text(_moved(doc, 2, 1e-8)) == render_text(doc)
    assert render_text(_moved(doc, 2, 1e-4)) != render_text(doc)


def test_compact_text_has_one_line_per_runtime_entry_without_timings():
    doc = make_document(4, providers={"CPUExecutionProvider": {"cpu": "float32"}}, folded=["layer1"])
    doc["meta"]["seconds"] = 9.2
    entry = doc["providers"]["CPUExecutionProvider"]["cpu"]
    entry["latency_ms"] = 0.25
    lines = render_text(doc).splitlines()
    worst = max(e["err"] for e in entry["layers"].values() if e["err"] is not None)
    decade = -math.ceil(math.log10(worst))
    assert f"provider CPUExecutionProvider cpu precision=float32 layers=4 err<1e-{decade:02d}" in lines, lines
    assert "statuses CPUExecutionProvider cpu folded=layer1" in lines
    assert not any(ln.startswith(("provider-layer", "meta seconds")) or "latency" in ln for ln in lines)
    entry["latency_ms"], doc["meta"]["seconds"] = 0.5, 11.0  # another run's timings: the same text
    assert render_text(doc).splitlines() == lines
    full = render_text(doc, full=True)
    assert "latency_ms=0.5" in full and "meta seconds 11.0" in full and "provider-layer " in full


@tools.needs(None if shutil.which("git") else "needs git")
def test_git_textconv_diff_shows_the_changed_layer(tmp_path):
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    (tmp_path / ".gitattributes").write_text("*.msgpack.zst diff=parity-gate\n")
    git("config", "diff.parity-gate.textconv", f"{sys.executable} -m gate.cli show --textconv")
    (tmp_path / "baselines").mkdir()
    path = tmp_path / "baselines" / "tiny.msgpack.zst"
    doc = make_document(6)
    write_baseline(path, doc)
    git("add", ".")
    git("commit", "-qm", "baseline")
    doc["layers"][3]["fp"]["max"] += 0.25
    write_baseline(path, doc)
    git("commit", "-qam", "moved")
    diff = git("diff", "HEAD~1")
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert len(changed) == 2, diff
    assert changed[0].startswith("-layer layer3 ") and changed[1].startswith("+layer layer3 ")
    shown = float(next(w for w in changed[1].split() if w.startswith("max=")).removeprefix("max="))
    assert math.isclose(shown, doc["layers"][3]["fp"]["max"], rel_tol=1e-5)
    assert "Binary files" not in diff
    assert path.read_bytes() == encode_baseline(doc)


def test_audit_keys_are_shown():
    doc = make_document(2)
    doc["meta"]["op_types"] = ["Conv", "Relu"]
    entry = doc["providers"]["CPUExecutionProvider"]["cpu"]
    entry["latency_ms"] = 2.5
    entry["placement"] = {
        "nodes": 4,
        "by_provider": {"CPUExecutionProvider": 3, "CUDAExecutionProvider": 1},
        "fallback_ops": ["Gather"],
        "fallback_nodes": ["/g"],
    }
    lines = render_text(doc, full=True).splitlines()
    assert "meta op_types 2 Conv,Relu" in lines
    assert "provider CPUExecutionProvider cpu precision=float32 layers=2 latency_ms=2.5" in lines
    assert (
        "placement CPUExecutionProvider cpu nodes=4 by_provider=CPUExecutionProvider:3,CUDAExecutionProvider:1 "
        "fallback_ops=Gather fallback_nodes=1"
    ) in lines


def test_numerics_settings_are_shown():
    doc = make_document(2)
    entry = doc["providers"]["CPUExecutionProvider"]["cpu"]
    entry["numerics"] = {"torch.backends.cuda.matmul.allow_tf32": "True"}
    assert ('provider CPUExecutionProvider cpu precision=float32 layers=2 '
            'numerics={"torch.backends.cuda.matmul.allow_tf32": "True"}') \
        in render_text(doc, full=True).splitlines()

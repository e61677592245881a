"""The one ``Baseline`` type: read, written, merged and diffed, on real files.

Every committed baseline (and sweep set) goes through the type and back to the same msgpack
payload; a run merged over the previous baseline keeps, drops and rewrites entries by the rules
of ``update-baseline``; ``describe`` says what moved in the lines the command prints.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
import zstandard

from gate.commands.common import load_baseline
from gate.config import load_config
from gate.core.runs import ModelRun, ProviderRun
from gate.core.target import Target
from gate.errors import FormatError, GateError
from gate.formats.baseline import (
    Baseline,
    decode_baseline,
    describe,
    encode_baseline,
    merge_run,
    read_baseline,
    store,
    write_baseline,
)
from gate.formats.baseline.sets import decode_set, encode_set, read_set
from gate.formats.baseline.store import Location
from gate.formats.baseline.update import LATENCY_BAND
from tests.conftest import ROOT
from tests.support.baseline_docs import make_document
from tests.support.verdicts import CPU, NAMES, fp, run, runtime

COMMITTED = sorted((ROOT / "baselines").rglob("*.msgpack.zst"))
SETS = sorted(p for p in COMMITTED if p.parent.name == "sweeps")
GPU = "cuda-sm90-NVIDIA_H100_80GB_HBM3"
ORT_CPU = Target("CPUExecutionProvider", CPU)
# A complete meta with today's fingerprint parameters, so the runs below make writable baselines.
META = read_baseline(ROOT / "baselines" / "tiny-cnn.msgpack.zst").meta


def _payload(data: bytes) -> bytes:
    """The frame's content: what the writer decided (the zstd bytes depend on libzstd's version)."""
    return zstandard.ZstdDecompressor().decompress(data)


def _through_type(raw: bytes, source: str) -> bytes:
    """decode -> Baseline -> to_document -> encode, for a baseline or for every case of a set."""
    try:
        doc = decode_baseline(raw, source)
    except FormatError:  # a sweep's set file: each case is a baseline document
        sweep = decode_set(raw, source)
        sweep["cases"] = {name: Baseline.from_document(case).to_document() for name, case in sweep["cases"].items()}
        return encode_set(sweep)
    return encode_baseline(Baseline.from_document(doc).to_document())


def _run(*targets: ProviderRun, names: tuple[str, ...] = NAMES, moves: dict[str, float] | None = None,
         **fps) -> ModelRun:
    out = run(names, moves, **fps)
    out.meta, out.providers = replace(META), list(targets)
    return out


def _entry(baseline: Baseline, target: Target):
    entry = baseline.entry(target)
    assert entry is not None, f"no entry for {target}"
    return entry


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.relative_to(ROOT / "baselines").as_posix())
def test_committed_baselines_round_trip_through_the_type(path):
    raw = path.read_bytes()
    assert _payload(_through_type(raw, str(path))) == _payload(raw)


def test_the_committed_baselines_include_files_of_both_kinds():
    assert ROOT / "baselines" / "tiny-cnn.msgpack.zst" in COMMITTED
    assert SETS, "no sweep set file under baselines/sweeps: the set round trip above tests nothing"


def test_the_store_rewrites_a_model_file_and_a_set_case_through_the_type(tmp_path):
    for source, loc in [(ROOT / "baselines" / "tiny-cnn.msgpack.zst", Location.of(tmp_path, "tiny-cnn")),
                        (SETS[0], Location.of(tmp_path, next(iter(read_set(SETS[0])["cases"])),
                                              sweep=SETS[0].name.removesuffix(".msgpack.zst")))]:
        shutil.copy(source, loc.path)
        read = store.read(loc)
        previous = store.update(loc, lambda prev: prev, lambda b: True)  # written back unchanged
        assert previous == read and _payload(loc.path.read_bytes()) == _payload(source.read_bytes())


def test_the_store_drops_the_cases_its_predicate_refuses(tmp_path):
    cases = list(read_set(SETS[0])["cases"])
    loc = Location.of(tmp_path, cases[0], sweep=SETS[0].name.removesuffix(".msgpack.zst"))
    shutil.copy(SETS[0], loc.path)
    seen: list[Baseline | None] = []

    def make(previous: Baseline | None) -> Baseline:
        seen.append(previous)
        return store.read(Location.of(ROOT / "baselines" / "sweeps", cases[0], loc.sweep))

    assert store.update(loc, make, lambda b: b.model not in cases[:2]) is None
    assert seen == [None]  # the case itself was refused: made anew
    assert list(read_set(loc.path)["cases"]) == [cases[0], *cases[2:]]


def test_a_merge_keeps_other_targets_entries_while_the_layers_match(tmp_path):
    gpu, arm = Target("CUDAExecutionProvider", GPU, "float16"), Target("CPUExecutionProvider", "aarch64")
    before = merge_run(_run(runtime(device=CPU), runtime(device="aarch64"),
                                    runtime("CUDAExecutionProvider", device=GPU, precision="float16")))
    path = tmp_path / "m.msgpack.zst"
    write_baseline(path, before)
    before = read_baseline(path)
    # Here only this class ran; the GPU was not there (skipped): its entry must survive too.
    now = _run(runtime(device=CPU, errs={"b": 3e-7}), ProviderRun.skipped(gpu, "no CUDA"))
    after = merge_run(now, before)
    assert _entry(after, arm) == _entry(before, arm) and _entry(after, gpu) == _entry(before, gpu)
    assert _entry(after, ORT_CPU).layers["b"].err == 3e-7
    assert [e.target for e in after.entries] == [arm, ORT_CPU, gpu]  # as the file orders them
    write_baseline(path, after)
    assert read_baseline(path) == after


def test_a_merge_drops_other_targets_entries_when_the_layers_change():
    names = NAMES[1:]
    before = merge_run(_run(runtime(device=CPU), runtime(device="aarch64"),
                                    runtime("CUDAExecutionProvider", device=GPU, precision="float16")))
    after = merge_run(_run(runtime(device=CPU, names=names), names=names), before)
    assert [e.target for e in after.entries] == [ORT_CPU]
    assert [x.name for x in after.layers] == list(names) and list(_entry(after, ORT_CPU).layers) == list(names)


@pytest.mark.parametrize("now, kept", [
    (2.0 * LATENCY_BAND, True), (2.0 * LATENCY_BAND * 1.01, False),
    (2.0 / LATENCY_BAND, True), (2.0 / LATENCY_BAND / 1.01, False),
    (None, True),  # result files collected without timing keep what was recorded
])
def test_a_merge_keeps_the_recorded_latency_within_its_band(now, kept):
    before = merge_run(_run(runtime(device=CPU, latency_ms=2.0)))
    after = merge_run(_run(runtime(device=CPU, latency_ms=now)), before)
    assert _entry(after, ORT_CPU).latency_ms == (2.0 if kept else now)


def test_a_recorded_latency_is_not_kept_over_a_changed_layer_set():
    before = merge_run(_run(runtime(device=CPU, latency_ms=2.0)))
    after = merge_run(_run(runtime(device=CPU, latency_ms=2.5, names=NAMES[1:]), names=NAMES[1:]), before)
    assert _entry(after, ORT_CPU).latency_ms == 2.5


def test_changes_name_a_new_baseline_a_new_entry_and_no_change():
    before = merge_run(_run(runtime(device=CPU), runtime("torch-cpu")))
    assert describe(None, before) == [
        "new baseline: 4 layers, providers: CPUExecutionProvider (x86_64-avx2), torch-cpu (x86_64-avx2)"]
    assert describe(before, merge_run(_run(runtime(device=CPU)), before)) == ["no change"]
    gpu = runtime("CUDAExecutionProvider", device=GPU, precision="bfloat16")
    assert describe(before, merge_run(_run(gpu), before)) == [
        f"CUDAExecutionProvider ({GPU}:bfloat16): new entry"]


def test_changes_name_added_and_removed_layers_and_one_that_holds_a_removed_ones_values_as_renamed():
    before = merge_run(_run(runtime(device=CPU)))
    names = ("a", "c", "d", "e", "(model)")
    moves = {"d": 0.5, "e": 0.25}
    after = merge_run(_run(runtime(device=CPU, names=names), names=names, moves=moves), before)
    assert describe(before, after) == ["layers added: 2 (first: d)", "layers removed: 1 (first: b)"]
    # `b` now `d` with its values: one rename, not a layer added and one removed
    after = merge_run(_run(runtime(device=CPU, names=names), names=names, moves={"e": 0.25}), before)
    assert describe(before, after)[:2] == ["layers renamed: 1 (first: b -> d), values the same",
                                           "layers added: 1 (first: e)"]


def _reweighted(**more):
    """``META`` after a weight change: the whole weights digest and one tensor's moved."""
    tensors = {**(META.tensor_digests or {}), "block1.bn1.weight": "f" * 16}
    return replace(META, weights_digest="w2", tensor_digests=tensors, **more)


TENSOR = " (tensor `block1.bn1.weight`)"


def test_changes_name_a_moved_reference_first_and_largest():
    before = merge_run(_run(runtime(device=CPU)))
    after = merge_run(_run(runtime(device=CPU), moves={"b": 0.25, "c": 0.5}), before)
    same = "; graph, weights and inputs the same"
    assert describe(before, after) == [
        f"reference moved on 2 layers (first: b by 0.25, largest: c by 0.5){same}"]
    reshaped = merge_run(_run(runtime(device=CPU), moves={"b": 0.25}, c=fp(shape=(3, 4))), before)
    assert describe(before, reshaped) == [
        f"reference moved on 2 layers (first: b by 0.25, largest: c by inf){same}"]
    moved = _run(runtime(device=CPU), moves={"c": 0.5})
    retrained = merge_run(replace(moved, meta=_reweighted()), before)
    assert describe(before, retrained) == [
        f"reference moved on 1 layer (first: c by 0.5, largest: c by 0.5); weights changed{TENSOR}, "
        "graph and inputs the same"]
    head = "reference moved on 1 layer (first: c by 0.5, largest: c by 0.5); "
    # the shipped graph holds the weights: new weights move its digest, which then says nothing of the code
    rebound = merge_run(replace(moved, meta=_reweighted(graph_digest="g2")), before)
    assert describe(before, rebound) == [f"{head}weights changed{TENSOR}, inputs the same"]
    recoded = merge_run(replace(moved, meta=_reweighted(graph_digest="g2", op_types=[*META.op_types, "Mul"])),
                        before)
    assert describe(before, recoded) == [f"{head}graph and weights changed{TENSOR}, inputs the same"]
    edited = merge_run(replace(moved, meta=replace(META, graph_digest="g2")), before)
    assert describe(before, edited) == [f"{head}graph changed, weights and inputs the same"]


def test_changes_say_what_a_baseline_is_a_function_of_changed_where_no_number_moved():
    """New digests or stage keys with the old numbers (a forged file, or a change no layer shows) are said,
    never "no change"; the same file twice is "no change"."""
    before = merge_run(_run(runtime(device=CPU)))
    keys = {**(META.content_key or {}), "key": "0" * 64}
    meta = _reweighted(graph_digest="g2", content_key=keys)
    rekeyed = merge_run(replace(_run(runtime(device=CPU)), meta=meta), before)
    assert describe(before, rekeyed) == [
        f"no recorded value moved; weights changed{TENSOR}, inputs the same; its stage keys changed"]
    assert describe(before, merge_run(_run(runtime(device=CPU)), before)) == ["no change"]


def test_changes_leave_out_a_reference_that_moved_within_its_noise():
    """float64 across CPUs: ~1e-16; the summary names only layers past the reference's noise (1e-10)."""
    before = merge_run(_run(runtime(device=CPU)))
    assert describe(before, merge_run(_run(runtime(device=CPU), moves={"b": 1e-14}), before)) == ["no change"]
    moved = describe(before, merge_run(_run(runtime(device=CPU), moves={"b": 1e-14, "c": 1e-8}), before))
    assert moved[0].startswith("reference moved on 1 layer (first: c by 1e-08")


def test_changes_name_limits_a_baseline_loosened_whatever_its_numbers():
    """A pull request's baseline with the same numbers and a layer's calibrated noise grown, or its
    precision coarsened, lets the reference move by more: the text a reviewer reads says so, and a move
    is judged by the noise of the baseline it replaces, not the new one's."""
    before = merge_run(_run(runtime(device=CPU)))
    noisy = replace(before, layers=[replace(x, noise=1e-3) for x in before.layers])
    assert describe(before, noisy) == [
        "limits loosened: calibrated noise grew on 4 layers (first: a, 0 -> 0.001)"]
    coarse = replace(before, layers=[replace(x, reached="bfloat16") if x.name == "c" else x
                                     for x in before.layers])
    assert describe(before, coarse) == [
        "limits loosened: precision coarsened on 1 layer (first: c, float64 -> bfloat16)"]
    moved = merge_run(_run(runtime(device=CPU), moves={"c": 1e-4}), before)
    hidden = replace(moved, layers=[replace(x, noise=1e-3) for x in moved.layers])
    assert describe(before, hidden)[0].startswith("reference moved on 1 layer (first: c by 0.0001")
    assert describe(noisy, before) == ["no change"]  # limits tightened


def test_changes_name_an_entry_whose_precision_or_rows_changed_with_the_same_numbers():
    """A runtime entry forged with its errors kept: its precision coarsened, its errors NaN (no limit holds
    them), its layers marked folded (no longer compared). Each is said, never "no change"; its twin, the
    same entry twice, is "no change"."""
    before = merge_run(_run(runtime(device=CPU)))
    (entry,) = [e for e in before.entries if e.target.provider == "CPUExecutionProvider"]

    def forged(**change) -> list[str]:
        changed = replace(entry, **change)
        entries = [changed if e is entry else e for e in before.entries]
        return describe(before, replace(before, entries=entries))

    head = "CPUExecutionProvider (x86_64-avx2)"
    assert forged(precision="int8") == [f"{head}: limits loosened: precision float32 -> int8"]
    nan = {name: replace(row, err=float("nan")) for name, row in entry.layers.items()}
    assert forged(layers=nan)[0].startswith(f"{head}: error grew >1.5x on 4 layers (most: ")
    folded = {name: replace(row, status="folded", err=None) for name, row in entry.layers.items()}
    assert forged(layers=folded) == [f"{head}: no longer compared on 4 layers (first: a, ok -> folded)"]
    assert forged() == ["no change"]
    # a slowdown recorded: the latency max-slowdown judges against grew; within the timing noise, nothing
    timed = replace(entry, latency_ms=0.02)
    before = replace(before, entries=[timed if e is entry else e for e in before.entries])
    entry = timed
    said = f"{head}: limits loosened: recorded latency 0.02 -> 5 ms (250.0x), which max-slowdown judges " \
           "against"
    assert forged(latency_ms=5.0) == [said]
    assert forged(latency_ms=0.035) == ["no change"]


def test_changes_name_errors_that_grew_per_entry(tmp_path):
    """As ``update-baseline`` does it: the previous baseline is the one the store re-read."""
    loc, keep = Location.of(tmp_path, "m"), (lambda b: True)
    store.update(loc, lambda prev: merge_run(_run(runtime(device=CPU), runtime("torch-cpu")), prev), keep)
    grown = _run(runtime(device=CPU, errs={"a": 1.6e-7, "c": 1e-6}), runtime("torch-cpu", errs={"b": 1.4e-7}))
    made: list[Baseline] = []
    previous = store.update(loc, lambda prev: made.append(merge_run(grown, prev)) or made[0], keep)
    assert describe(previous, made[0]) == [
        "CPUExecutionProvider (x86_64-avx2): error grew >1.5x on 2 layers (most: c, 10.00x)"]
    assert read_baseline(loc.path) == made[0]


def test_load_baseline_names_the_fingerprint_parameter_that_differs(tmp_path):
    """Read as a ``Baseline`` first: fingerprints of other parameters must not fail as a format
    error, so the refusal can say which parameter differs."""
    config = tmp_path / "parity-gate.toml"
    config.write_text('baseline-dir = "b"\n\n[[models]]\nname = "tiny"\nfactory = "x:y"\n'
                      'inputs = [{ name = "x", shape = [1], dtype = "float32" }]\n')
    cfg = load_config(config)
    path = tmp_path / "b" / "tiny.msgpack.zst"
    write_baseline(path, make_document())  # sketch width 8, 7 quantiles, sketch seed 0
    with pytest.raises(GateError, match=r"another sketch width \(8 vs 256 here\).*update-baseline --model tiny"):
        load_baseline(cfg, cfg.models[0])
    write_baseline(path, replace(merge_run(_run(runtime(device=CPU))), model="tiny"))
    loaded_path, baseline = load_baseline(cfg, cfg.models[0])
    assert loaded_path == path and baseline is not None and baseline.entry(ORT_CPU) is not None

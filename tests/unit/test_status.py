"""gate.core.status: one vocabulary for runs and verdicts. Members are their values in every text
and file, every word crosses result files and reports as its member, and the rules that read skip
kinds do not depend on the order runs were assembled in."""

from __future__ import annotations

import copy
import json

import msgpack
import pytest

from gate.core.fields import Obj
from gate.core.runs import ModelRun, ProviderRun
from gate.core.status import ErrorStatus, LayerStatus, RunStatus, SkipKind, TargetStatus, Verdict, Word
from gate.core.target import Target
from gate.formats.results import read_runs, write_runs
from gate.verdict.gpu_leg import missing_gpu
from gate.verdict.judge import assemble, model_verdict
from gate.verdict.types import Report
from tests.support.verdicts import baseline, entry, run, runtime, spec


def test_a_member_is_its_value_in_text_json_and_msgpack():
    assert f"{RunStatus.SKIPPED}" == str(RunStatus.SKIPPED) == "skipped" and f"{ErrorStatus.NO_GPU:>7}" == " NO_GPU"
    assert json.dumps({ErrorStatus.CRASH: TargetStatus.NO_BASELINE}) == '{"CRASH": "no-baseline"}'
    assert msgpack.unpackb(msgpack.packb([SkipKind.SWEEP])) == ["sweep"]
    assert RunStatus("ok") is RunStatus.OK and {"error": 1}[RunStatus.ERROR] == 1


def test_each_vocabulary_lists_its_words_once():
    for vocabulary in Word.__subclasses__():
        values = vocabulary.values()
        assert len(values) == len(set(values)) and values, vocabulary


def test_verdicts_carry_their_exit_codes():
    assert [v.exit_code for v in Verdict] == [0, 1, 3]


@pytest.mark.parametrize("status", list(ErrorStatus))
def test_every_error_status_and_skip_kind_crosses_a_result_file(tmp_path, status):
    target = Target("CUDAExecutionProvider", "gpu")
    runs = [ModelRun("m", providers=[ProviderRun.failed(target, status, "why"),
                                     ProviderRun.skipped(target, "not here", SkipKind.UNRUN)])]
    write_runs(tmp_path / "r.msgpack.zst", runs)
    failed, skipped = read_runs(tmp_path / "r.msgpack.zst")[0].providers
    assert failed.error_status is status and failed.status is RunStatus.ERROR
    assert skipped.skip is SkipKind.UNRUN and skipped.status is RunStatus.SKIPPED


def test_a_report_read_back_holds_members_and_its_skip_kinds():
    r = run()
    r.providers = [runtime(), ProviderRun.skipped(Target("OpenVINOExecutionProvider", "x86_64-avx2"), "sweep says no",
                                                  SkipKind.SWEEP)]
    report = assemble([model_verdict(spec(), r, baseline(entry()), "b.msgpack.zst", "cmd")], {})
    back = Report.from_dict(Obj(json.loads(json.dumps(report.to_dict())), "report"))
    assert back.verdict is Verdict.PASS and back.models[0].update_command == "cmd"
    skipped = back.models[0].providers[-1]
    assert skipped.status is TargetStatus.SKIPPED and skipped.skip is SkipKind.SWEEP


def test_an_unknown_word_is_one_line_naming_the_key():
    report = assemble([model_verdict(spec(), run(), baseline(entry()), "b.msgpack.zst", "cmd")], {}).to_dict()
    report["models"][0]["providers"][0]["status"] = "fine"
    with pytest.raises(Exception, match=r"`models\[0\]\.providers\[0\]\.status`: 'fine' is not one of pass, "):
        Report.from_dict(Obj(report, "report"))


def test_a_gpu_leg_that_ran_nowhere_is_not_a_gpu_leg_without_a_gpu():
    # Unrun legs and a sweep's own skips are decisions, whatever order they were added in.
    gpu = Target("CUDAExecutionProvider", "gpu")
    assert missing_gpu([ProviderRun.skipped(gpu, "no result file holds it", SkipKind.UNRUN)]) == []
    assert missing_gpu([ProviderRun.skipped(gpu, "the sweep skips it", SkipKind.SWEEP)]) == []
    assert missing_gpu([ProviderRun.skipped(gpu, "not installed")]) == ["CUDAExecutionProvider"]


def test_a_baseline_written_from_typed_statuses_holds_their_values():
    # The baseline writer packs strictly: a status word goes in as its plain value, bytes unchanged.
    from gate.formats.baseline import decode_baseline, encode_baseline
    from tests.support.baseline_docs import make_document

    doc = make_document()
    typed = copy.deepcopy(doc)
    for devices in typed["providers"].values():
        for e in devices.values():
            for layer in e["layers"].values():
                layer["status"] = LayerStatus(layer["status"])
    assert encode_baseline(typed) == encode_baseline(doc)
    back = decode_baseline(encode_baseline(typed), "b")
    assert {type(x["status"]) for d in back["providers"].values() for e in d.values() for x in e["layers"].values()} == {str}


def test_a_reference_that_never_ran_is_an_error_row_never_a_pass():
    from gate.core.runs import RunError

    failed = ModelRun("m", error=RunError(ErrorStatus.INFER_FAIL, "model `m`: PyTorch forward failed", "models.py:3 in f"))
    mv = model_verdict(spec(), failed, baseline(entry()), "b.msgpack.zst", "cmd")
    reference = mv.providers[0]
    assert (reference.status, reference.error_status, reference.where) == (
        TargetStatus.ERROR, ErrorStatus.INFER_FAIL, "models.py:3 in f")
    assert reference.reason == "did not run: model `m`: PyTorch forward failed" and reference.checked == 0
    assert assemble([mv], {}).to_dict()["models"][0]["providers"][0]["status"] == "error"


def test_changed_tensors_are_named_and_past_three_counted_per_module():
    from gate.verdict.hints.change import describe_tensors
    from gate.verdict.hints.weights import TensorChanges, tensor_changes

    before = {"bn.running_mean": "a" * 16, "bn.weight": "b" * 16, "fc.weight": "c" * 16}
    assert tensor_changes(before, {**before, "bn.running_mean": "d" * 16}, {}) == TensorChanges(
        ["bn.running_mean"], 0, [])
    assert tensor_changes(before, None, {}) is None and tensor_changes({}, before, {}) is None
    # Names on one side only are no change of value anyone measured.
    assert tensor_changes(before, {"fc.weight": "c" * 16, "head.bias": "e" * 16}, {}) == TensorChanges(
        [], 0, ["bn.running_mean", "bn.weight", "head.bias"], ["head.bias"])
    assert describe_tensors(["bn.running_mean"]) == "tensor `bn.running_mean`"
    many = [f"layer4.1.conv{i}.weight" for i in range(3)] + ["layer4.1.bn.weight", "fc.weight"]
    assert describe_tensors(many) == "5 tensors: 4 of layer4.1, 1 of fc"


def test_a_module_the_verdict_matched_under_a_new_name_keeps_its_tensors_unchanged():
    from gate.verdict.hints.weights import TensorChanges, tensor_changes

    before = {"classifier.fc1.weight": "a" * 16, "classifier.fc1.bias": "b" * 16, "stem.weight": "c" * 16}
    # Digests cover names: the renamed module's tensors differ by digest, whatever their values.
    now = {"classifier.proj.weight": "d" * 16, "classifier.proj.bias": "e" * 16, "stem.weight": "f" * 16}
    assert tensor_changes(before, now, {"classifier.proj": "classifier.fc1"}) == TensorChanges(["stem.weight"], 2, [])
    # A call (#2) or element ([0]) suffix names the same module.
    assert tensor_changes(before, {**now, "stem.weight": "c" * 16}, {"classifier.proj#2[0]": "classifier.fc1#2[0]"}) \
        == TensorChanges([], 2, [])
    # A tensor of a module that has no layer of its own (a parameter used in its parent's forward) takes
    # the rename of its nearest renamed parent; a child that is not matched stays unmatched.
    before = {"classifier.pos": "a" * 16, "classifier.fc1.weight": "b" * 16}
    nested = {"head.pos": "c" * 16, "head.proj.weight": "d" * 16}
    assert tensor_changes(before, nested, {"head": "classifier"}) == TensorChanges(
        [], 1, ["classifier.fc1.weight", "head.proj.weight"], ["head.proj.weight"])
    # A layer matched to another module's baseline layer by its values (a hook moved `act` into `conv`)
    # renames no tensor that kept its name and digest; modules that swapped names still swap tensors.
    before = {"b.conv.weight": "a" * 16, "b.conv.bias": "b" * 16}
    assert tensor_changes(before, dict(before), {"b.conv": "b.act"}) == TensorChanges([], 0, [])
    swapped = {"enc1.weight": "c" * 16, "enc2.weight": "d" * 16}
    assert tensor_changes({"enc1.weight": "d" * 16, "enc2.weight": "c" * 16}, swapped,
                          {"enc1": "enc2", "enc2": "enc1"}) == TensorChanges([], 2, [])

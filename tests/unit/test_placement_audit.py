"""gate.verdict.placement: nodes an EP gives up since the baseline, where they went, and changed
EP options; records of different sources are never compared."""

from __future__ import annotations

from gate.verdict.placement import placement_audit

TRT = "TensorrtExecutionProvider"
BEFORE = {"nodes": 40, "by_provider": {TRT: 40}, "fallback_ops": [], "fallback_nodes": [],
          "options": {"trt_fp16_enable": "1", "trt_engine_cache_enable": "1"}}
AFTER = {"nodes": 40, "by_provider": {TRT: 28, "CUDAExecutionProvider": 10, "CPUExecutionProvider": 2},
         "fallback_ops": ["NonZero", "Where"], "fallback_nodes": [f"Where:w{i}" for i in range(10)] + ["NonZero:a", "NonZero:b"],
         "options": {"trt_fp16_enable": "1", "trt_engine_cache_enable": "1"}}


def test_nodes_tensorrt_gives_up_are_counted_and_placed():
    [audit] = placement_audit(TRT, BEFORE, AFTER, "fail")
    assert (audit.check, audit.status) == ("placement", "fail")
    assert audit.message == (f"{TRT}: 12 more node(s) fall back to another EP (new op types: NonZero, Where); {TRT} runs "
                             "28 of 40 node(s), 40 of 40 in the baseline; now on CPUExecutionProvider +2, "
                             "CUDAExecutionProvider +10")
    assert placement_audit(TRT, BEFORE, AFTER, "warn")[0].status == "warn"
    assert placement_audit(TRT, BEFORE, AFTER, "off") == []


def test_the_same_placement_is_no_audit():
    assert placement_audit(TRT, BEFORE, dict(BEFORE), "fail") == []
    assert placement_audit(TRT, AFTER, dict(AFTER), "fail") == []


def test_fewer_own_nodes_count_even_when_the_listed_fallbacks_are_capped():
    capped = [f"Add:n{i}" for i in range(200)]
    before = {"nodes": 500, "by_provider": {TRT: 300, "CUDAExecutionProvider": 200}, "fallback_ops": ["Add"],
              "fallback_nodes": capped}
    after = {**before, "by_provider": {TRT: 290, "CUDAExecutionProvider": 210}}
    [audit] = placement_audit(TRT, before, after, "warn")
    assert audit.message.startswith(f"{TRT}: 10 more node(s) fall back to another EP; ")


def test_records_of_different_sources_are_not_compared():
    profiled = {**AFTER, "source": "profile"}
    assert placement_audit(TRT, BEFORE, profiled, "fail") == []
    assert placement_audit(TRT, {**BEFORE, "source": "profile"}, profiled, "fail") != []


def test_changed_ep_options_warn_naming_them():
    after = {**BEFORE, "options": {"trt_fp16_enable": "0", "trt_engine_cache_enable": "1", "trt_int8_enable": "1"}}
    [audit] = placement_audit(TRT, BEFORE, after, "fail")
    assert (audit.status, audit.message) == ("warn", f"{TRT}: EP options changed since the baseline "
                                                     "(trt_fp16_enable 1 -> 0, trt_int8_enable - -> 1)")
    no_options = {k: v for k, v in BEFORE.items() if k != "options"}
    assert placement_audit(TRT, no_options, after, "fail") == []  # a baseline that recorded none

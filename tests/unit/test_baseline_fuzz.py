"""Fuzz the baseline reader: it answers every input with a document or one FormatError line,
within its memory caps and with work linear in what it is given.

Default run: 300 inputs per strategy (a few seconds). Longer run:
    PARITY_GATE_FUZZ_EXAMPLES=10000 PYTHONPATH=. python -m pytest tests/unit/test_baseline_fuzz.py
"""

from __future__ import annotations

import copy
import os
import re
import sys
import tracemalloc

import msgpack
import pytest
import zstandard
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from gate.errors import FormatError
from gate.formats.baseline import Limits, decode_baseline, encode_baseline
from tests.support.baseline_docs import make_document

EXAMPLES = int(os.environ.get("PARITY_GATE_FUZZ_EXAMPLES", "300"))
# Small caps so that "never more than its caps" is measurable: the frame may declare at most
# 1 MiB, so decompression plus parsing must stay within a small multiple of that.
LIMITS = Limits(
    max_file_size=1 << 20,
    max_decompressed_size=1 << 20,
    max_layers=64,
    max_name_length=64,
    max_providers=8,
    max_device_classes=4,
    max_sketch_width=64,
    max_rank=8,
    max_quantiles=16,
    max_text_length=128,
)
PEAK_BOUND = 6 * LIMITS.max_decompressed_size
# Work, not seconds. A per-input time limit fails under coverage tracing or on a loaded 2-core
# runner however well the reader behaves; what it stood for is that no input makes the reader run
# away (a loop driven by a crafted length, count or nesting, work that grows faster than the
# input). That is counted instead, deterministically: the Python-level calls the reader makes
# (sys.setprofile events) per byte it can be made to look at, which is the file plus the content
# its frame declares (refused over the cap before decompressing; never decompressed past it).
# The seeds take ~2 events a byte; 20 leaves room for other Python versions and is still far
# below what a quadratic walk or a skip that re-reads would take.
WORK_PER_BYTE = 20
WORK_BASE = 5_000

SEED_DOCS = [
    make_document(3, sketch_width=4, quantiles=(0.0, 0.5, 1.0)),
    make_document(1, providers=(), sketch_width=1, quantiles=(0.5,)),
    make_document(
        5,
        providers={"CPUExecutionProvider": {"cpu": "float32"}, "CUDAExecutionProvider": {"sm90": "float16"}},
        folded=["layer1"],
        sketch_width=8,
    ),
    make_document(0, providers=()),
    make_document(2, shape=(0, 4), sketch_width=2),
]
_audited = make_document(2, sketch_width=2)
_audited["meta"]["op_types"] = ["Conv", "Relu"]
_audited["providers"]["CPUExecutionProvider"]["cpu"].update(
    latency_ms=0.5,
    placement={"nodes": 2, "by_provider": {"CPUExecutionProvider": 2}, "fallback_ops": [], "fallback_nodes": []},
)
SEED_DOCS.append(_audited)
SEED_FILES = [encode_baseline(d) for d in SEED_DOCS]
SEED_PAYLOADS = [zstandard.ZstdDecompressor().decompress(f) for f in SEED_FILES]

fuzz_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,  # no wall-clock limit: the reader's work is counted per input below
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


STATS = {"inputs": 0, "max_work": 0.0, "max_peak": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_stats():
    yield
    print(
        f"\nfuzz: {STATS['inputs']:,} inputs, most work {STATS['max_work']:.1%} of its bound, "
        f"highest tracemalloc peak {STATS['max_peak']:,} bytes (bound {PEAK_BOUND:,})"
    )


def reachable_bytes(data: bytes) -> int:
    """What the reader can be made to look at: the file, and the content its frame declares
    when that is within the cap (the reader refuses a larger declaration before decompressing)."""
    try:
        declared = zstandard.get_frame_parameters(data).content_size
    except zstandard.ZstdError:
        declared = 0
    return len(data) + (declared if 0 <= declared <= LIMITS.max_decompressed_size else 0)


def work_bound(data: bytes) -> int:
    return WORK_BASE + WORK_PER_BYTE * reachable_bytes(data)


def decode_counting(data: bytes) -> tuple[dict | None, str | None, int, int]:
    """The reader on ``data``: (document, FormatError message, Python calls made, tracemalloc peak)."""
    calls = 0

    def count(frame, event, arg) -> None:
        nonlocal calls
        calls += 1

    doc = message = None
    tracemalloc.start()  # only around the reader: hypothesis itself runs untraced (and fast)
    sys.setprofile(count)
    try:
        doc = decode_baseline(data, "fuzz.msgpack.zst", LIMITS)
    except FormatError as e:
        message = str(e)
    finally:
        sys.setprofile(None)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return doc, message, calls, peak


def check_reader(data: bytes) -> None:
    doc, message, calls, peak = decode_counting(data)
    if doc is None:
        assert (
            message.startswith("baseline `fuzz.msgpack.zst`: ") and "\n" not in message and message.isascii()
        )
    reachable, bound = reachable_bytes(data), work_bound(data)
    assert calls <= bound, f"{calls:,} calls for {reachable:,} bytes the reader can reach (bound {bound:,})"
    assert peak < PEAK_BOUND, f"peak {peak:,} bytes for {len(data):,} bytes of input"
    STATS["inputs"] += 1
    STATS["max_work"] = max(STATS["max_work"], calls / bound)
    STATS["max_peak"] = max(STATS["max_peak"], peak)
    if doc is None:
        rule = message.split("`: ", 1)[1]
        event("refused: " + re.sub(r"\d[\d,]*|\b[0-9a-f]{2}\b", "#", rule)[:48])
    else:  # what the reader accepts, the writer writes back identically
        event("accepted")
        data = encode_baseline(doc)
        assert encode_baseline(decode_baseline(data, "again", LIMITS)) == data


def _compress(payload: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=1, write_content_size=True).compress(payload)


# --- byte-level mutations -------------------------------------------------------------
op = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 7)),
    st.tuples(st.just("set"), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 20), st.integers(1, 64)),
    st.tuples(
        st.just("splice"),
        st.integers(0, 1 << 20),
        st.integers(0, len(SEED_FILES) - 1),
        st.integers(0, 1 << 20),
        st.integers(1, 256),
    ),
    st.tuples(st.just("repeat"), st.integers(0, 1 << 20), st.integers(1, 64), st.integers(2, 50)),
)


def mutate_bytes(data: bytes, ops, donors: list[bytes]) -> bytes:
    b = bytearray(data)
    for o in ops:
        if not b and o[0] not in ("insert",):
            continue
        n = len(b)
        if o[0] == "flip":
            b[o[1] % n] ^= 1 << o[2]
        elif o[0] == "set":
            b[o[1] % n] = o[2]
        elif o[0] == "truncate":
            del b[o[1] % n :]
        elif o[0] == "insert":
            pos = o[1] % (n + 1)
            b[pos:pos] = o[2]
        elif o[0] == "delete":
            pos = o[1] % n
            del b[pos : pos + o[2]]
        elif o[0] == "splice":
            donor = donors[o[2]]
            at = o[3] % len(donor)
            b[o[1] % n : o[1] % n + o[4]] = donor[at : at + o[4]]
        elif o[0] == "repeat":
            pos = o[1] % n
            chunk = bytes(b[pos : pos + o[2]])
            b[pos:pos] = chunk * o[3]
    return bytes(b)


@fuzz_settings
@given(seed=st.integers(0, len(SEED_FILES) - 1), ops=st.lists(op, min_size=1, max_size=5))
def test_fuzz_file_bytes(seed, ops):
    check_reader(mutate_bytes(SEED_FILES[seed], ops, SEED_FILES))


@fuzz_settings
@given(seed=st.integers(0, len(SEED_PAYLOADS) - 1), ops=st.lists(op, min_size=1, max_size=5))
def test_fuzz_msgpack_bytes_in_a_valid_frame(seed, ops):
    """Mutate the msgpack payload and re-wrap it in a good frame, so the mutations reach msgpack and schema."""
    check_reader(_compress(mutate_bytes(SEED_PAYLOADS[seed], ops, SEED_PAYLOADS)))


# --- structure-aware mutations ----------------------------------------------------------
INTERESTING_INTS = [0, 1, -1, 7, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(INTERESTING_INTS),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(),
    st.floats(width=32),
    st.text(max_size=24),
    st.sampled_from(
        ["", "ok", "folded", "float32", "float16", "cpu", "dynamo", "layer0", "(model)", "../x", "x" * 70]
    ),
    st.binary(max_size=80),
)
values = st.recursive(
    scalars,
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(st.text(max_size=8), ch, max_size=4),
    max_leaves=8,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def mutated_documents(draw):
    doc = copy.deepcopy(draw(st.sampled_from(SEED_DOCS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths[1:])) if len(paths) > 1 else ()
        if not path:
            break
        parent, key = _get(doc, path[:-1]), path[-1]
        action = draw(st.sampled_from(["replace", "delete", "add_key", "duplicate", "nudge"]))
        target = parent[key]
        if action == "replace":
            parent[key] = draw(values)
        elif action == "delete":
            del parent[key]
        elif action == "add_key" and isinstance(target, dict):
            target[draw(st.text(max_size=8))] = draw(values)
        elif action == "duplicate" and isinstance(target, list) and target:
            target.append(copy.deepcopy(target[draw(st.integers(0, len(target) - 1))]))
        elif action == "nudge" and isinstance(target, int) and not isinstance(target, bool):
            parent[key] = target + draw(st.sampled_from([-1, 1, 2**40, -(2**40)]))
        elif action == "nudge" and isinstance(target, (bytes, str)):
            parent[key] = target[: draw(st.integers(0, len(target)))] if target else target * 2
    single = draw(st.booleans()) and draw(st.booleans())
    return doc, single


@fuzz_settings
@given(mutated_documents())
def test_fuzz_document_structure(case):
    doc, single_float = case
    try:
        payload = msgpack.packb(doc, use_bin_type=True, use_single_float=single_float)
    except (OverflowError, ValueError, TypeError):
        assume(False)
    check_reader(_compress(payload))


def test_fuzz_bounds_are_meaningful():
    """The memory bound would catch an allocation of the declared size: a frame may declare 1 MiB.
    The work counter sees the reader's work (at least a call per few bytes of a valid document),
    and a valid document stays far inside its bound."""
    assert PEAK_BOUND < 16 * LIMITS.max_decompressed_size
    for data, payload in zip(SEED_FILES, SEED_PAYLOADS, strict=True):
        doc, message, calls, peak = decode_counting(data)
        assert doc is not None, message
        assert peak < PEAK_BOUND
        assert len(payload) // 4 < calls < work_bound(data) // 4, (calls, len(payload))

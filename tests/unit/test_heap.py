"""gate.runners.heap: freed heap pages go back to the operating system."""

from __future__ import annotations

import os
import sys

import pytest

from gate.runners import heap


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.exists("/proc/self/statm"),
                    reason="RSS from /proc")
def test_freed_blocks_held_below_a_live_one_are_released():
    big = bytearray(30 * 2**20)
    del big  # glibc raises its mmap threshold: the 1 MiB blocks below come from the heap
    blocks = [bytearray(2**20) for _ in range(200)]
    last = blocks[-1]  # keeps the heap's top in use, so free() alone cannot shrink it
    del blocks
    before = _rss_mib()
    if not heap.trim():
        pytest.skip("no malloc_trim in this C library")
    assert before - _rss_mib() > 150
    assert len(last) == 2**20

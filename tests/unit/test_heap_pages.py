"""gate.runners.heap: where fresh memory may be faulted in on huge pages."""

from __future__ import annotations

import pytest

from gate.runners import heap


def _thp() -> str | None:
    """This process's ``THP_enabled`` as the kernel reports it (not through ``heap``)."""
    try:
        with open("/proc/self/status") as f:
            return next((line.split()[1] for line in f if line.startswith("THP_enabled:")), None)
    except OSError:
        return None


NO_THP = "THP_enabled: 1 in /proc/self/status (Linux 5.0 and later, THP built)"


def test_a_capture_faults_in_on_huge_pages_from_the_documented_size():
    assert heap.capture_pages(heap.HUGE_CAPTURE_BYTES)
    assert not heap.capture_pages(heap.HUGE_CAPTURE_BYTES - 1)
    assert not heap.capture_pages(0)


@pytest.mark.skipif(_thp() != "1", reason=NO_THP)
def test_huge_pages_are_refused_within_the_block_and_allowed_again_after():
    with heap.huge_pages(False) as took:
        assert took and _thp() == "0"
        with heap.huge_pages(True) as inner:  # a stretch inside another: its own setting, then the outer's
            assert inner and _thp() == "1"
        assert _thp() == "0"
    assert _thp() == "1"


@pytest.mark.skipif(_thp() != "1", reason=NO_THP)
def test_the_setting_before_comes_back_after_an_error():
    with pytest.raises(RuntimeError), heap.huge_pages(False):
        assert _thp() == "0"
        raise RuntimeError("a session failed")
    assert _thp() == "1"

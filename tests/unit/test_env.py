"""The settings read from the environment (``gate.env``): each variable parsed by one rule."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gate
from gate import env
from gate.errors import ConfigError


@pytest.mark.parametrize(("value", "on"), [("1", True), ("yes", True), ("On", True), ("", False),
                                           ("0", False), ("false", False), ("off", False), (None, False)])
def test_full_and_debug_are_one_flag_rule(value, on):
    for read, name in ((env.full, env.FULL), (env.debug, env.DEBUG)):
        assert read({} if value is None else {name: value}) is on


def test_the_store_folder_and_its_bound():
    assert env.store_dir({env.CACHE_DIR: "off"}) is None
    assert env.store_dir({env.CACHE_DIR: "/x/store"}) == Path("/x/store")
    assert env.store_dir({"XDG_CACHE_HOME": "/x/cache"}) == Path("/x/cache/parity-gate")
    assert env.store_max_bytes({env.CACHE_MAX_GB: "0.5"}) == 2**29
    assert env.store_max_bytes({env.CACHE_MAX_GB: "many"}) == env.store_max_bytes({}) == 20 * 2**30


def test_a_wrong_value_names_its_variable():
    with pytest.raises(ConfigError, match=env.THREADS):
        env.threads({env.THREADS: "0"})
    with pytest.raises(ConfigError, match=env.BESIDE):
        env.beside({env.BESIDE: "sometimes"})
    assert env.worker_hook({env.WORKER_HOOK: ""}) is None


def test_huge_pages_are_asked_for_in_started_processes(monkeypatch):
    monkeypatch.setattr(env.sys, "platform", "linux")
    environ: dict[str, str] = {}
    assert env.huge_pages(environ)
    assert environ == {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}  # never torch's allocator here
    assert not env.huge_pages(environ)  # set once: the process started again does not start a third time
    environ = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2", "THP_MEM_ALLOC_ENABLE": "1"}
    assert env.huge_pages(environ)  # the user's own settings are kept, their tunables extended
    assert environ == {"THP_MEM_ALLOC_ENABLE": "1",
                       "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"}
    environ = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}
    assert not env.huge_pages(environ)
    assert environ["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=0"


def test_huge_pages_leave_other_systems_alone(monkeypatch):
    monkeypatch.setattr(env.sys, "platform", "darwin")
    environ: dict[str, str] = {}
    assert not env.huge_pages(environ)
    assert environ == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tunables: Linux")
@pytest.mark.parametrize("user", [None, "glibc.malloc.hugetlb=0"])
def test_the_command_starts_again_with_what_glibc_reads_at_start(user):
    # What the process started with (/proc/self/environ), before the command runs: after `start` sets the
    # tunable, the process must begin again to read it; where the user set it, it runs once, as they set it.
    code = ("import sys; print(open('/proc/self/environ', 'rb').read().split(b'\\0').count("
            f"b'GLIBC_TUNABLES={(user or 'glibc.malloc.hugetlb=1')}'), flush=True); "
            "from gate.cli.start import main; main()")
    environ = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    environ |= {"GLIBC_TUNABLES": user} if user else {}
    environ["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", code, "--version"], env=environ, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == (["1", "parity-gate " + gate.__version__] if user else
                                        ["0", "1", "parity-gate " + gate.__version__])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tunables: Linux")
def test_a_command_read_from_standard_input_runs_once():
    environ = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    environ["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-", "--version"], input="from gate.cli.start import main; main()",
                          env=environ, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "parity-gate " + gate.__version__  # not started again: stdin is read

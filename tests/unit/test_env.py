"""The settings read from the environment (``gate.env``): each variable parsed by one rule."""

from __future__ import annotations

from pathlib import Path

import pytest

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

"""The release workflow and the wheel build settings: what a release promises, checked statically
(the workflow itself runs on GitHub; tests/e2e/test_package.py builds and installs here)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def workflow() -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())


def test_tags_build_wheels_on_every_platform_and_publish_by_trusted_publishing():
    wf = workflow()
    assert wf[True]["push"]["tags"] == ["v*.*.*"]  # YAML reads `on` as true
    jobs = wf["jobs"]
    assert set(jobs["wheels"]["strategy"]["matrix"]["os"]) == {
        "ubuntu-latest", "ubuntu-24.04-arm", "macos-15-intel", "macos-14", "windows-latest"}
    assert any(s.get("uses", "").startswith("pypa/cibuildwheel@") for s in jobs["wheels"]["steps"])
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["needs"] == ["sdist", "wheels"]
    # the job holding id-token runs only actions pinned by commit
    assert any(re.fullmatch(r"pypa/gh-action-pypi-publish@[0-9a-f]{40}", s.get("uses", "")) for s in publish["steps"])
    assert all(re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", s["uses"]) for s in publish["steps"] if "uses" in s)
    assert not any("password" in (s.get("with") or {}) for s in publish["steps"])
    assert jobs["move-major-tag"]["needs"] == "publish"


def test_wheels_require_the_kernel_and_run_the_fast_tests_on_the_installed_wheel():
    cibw = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]
    assert cibw["environment"]["PARITY_GATE_REQUIRE_NATIVE"] == "1"
    assert "gate.backend == 'native'" in cibw["test-command"][0]
    assert "tests" in cibw["test-sources"]  # a copy: the wheel is imported, not the source tree
    for path in cibw["test-command"][1].split():
        if path.startswith("tests/"):
            assert (ROOT / path).is_file(), path

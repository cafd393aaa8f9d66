"""The package as built: the wheel ships `functions/rl.lua` byte for byte, and the sdist
holds everything a wheel is built from. scripts/test-python-package.sh builds both and sets
RL_PACKAGE_WHEEL and RL_PACKAGE_SDIST; without them (a development install) these skip."""

from __future__ import annotations

import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

import redis_rl

WHEEL = os.environ.get("RL_PACKAGE_WHEEL")
SDIST = os.environ.get("RL_PACKAGE_SDIST")
built = pytest.mark.skipif(not (WHEEL and SDIST), reason="not run on a built package")


@built
def test_the_tests_run_on_the_installed_wheel_not_the_sources():
    assert ROOT / "clients/python/src" not in Path(redis_rl.__file__).parents


@built
def test_the_wheel_ships_the_library_and_the_type_marker():
    with zipfile.ZipFile(WHEEL) as z:
        assert z.read("redis_rl/rl.lua") == (ROOT / "functions/rl.lua").read_bytes()
        assert "redis_rl/py.typed" in z.namelist()


@built
def test_the_sdist_holds_the_sources_the_library_and_the_tests():
    with tarfile.open(SDIST) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for needed in ["pyproject.toml", "README.md", "src/redis_rl/rl.lua",
                   "src/redis_rl/__init__.py", "tests/conftest.py"]:
        assert needed in names, f"{needed} missing from the sdist"

"""functions/rl.lua, the file `FUNCTION LOAD` takes, is built from functions/parts/*.lua
by scripts/build-library.sh: the committed file must be the parts' join. (The packages'
copies are made when they are built, not committed: clients/python/tests/test_package.py
and clients/node/test/package.test.mjs check them.)"""

import re
import shutil
import subprocess

from conftest import ROOT

PARTS = sorted((ROOT / "functions/parts").glob("*.lua"))


def check(root):
    return subprocess.run(["bash", str(root / "scripts/build-library.sh"), "--check"],
                          capture_output=True, text=True)


def test_the_committed_library_is_its_parts_joined():
    out = check(ROOT)
    assert out.returncode == 0, out.stderr


def test_a_part_changed_without_a_rebuild_is_caught(tmp_path):
    shutil.copytree(ROOT / "functions", tmp_path / "functions")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/build-library.sh", tmp_path / "scripts")
    part = tmp_path / "functions/parts" / PARTS[1].name
    part.write_text(part.read_text() + "  -- a change\n")
    out = check(tmp_path)
    assert out.returncode == 1 and "stale" in out.stderr


def test_the_parts_are_the_sections_and_each_is_small():
    names = [p.stem for p in PARTS]
    assert names[0].endswith("header") and names[-1].endswith("registration"), names
    for p in PARTS:
        # (the generated zone table: one line a zone, as many as scripts/zone_table.rs is given)
        if p.name == "06-zones.lua":
            continue
        lines = p.read_text().count("\n")
        assert lines <= 500, f"{p.name}: {lines} lines"


def test_the_header_shows_every_function_and_the_penalty_option():
    """The library's opening comment is its usage: every function it registers is in it."""
    header = (ROOT / "functions/parts/01-header.lua").read_text().split("]==]")[0]
    registration = (ROOT / "functions/parts/15-registration.lua").read_text()
    names = re.findall(r"register_function(?:\('| \{ function_name = ')(\w+)'", registration)
    assert len(names) >= 14, names
    for name in names:
        assert re.search(rf"\b{name}\b", header), f"the header does not show {name}"
    assert "rl_ban 1 key ms" in header and "[PENALTY d [ESCALATE max]]" in header

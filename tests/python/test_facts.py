"""facts/rl.toml holds the facts the module, the Functions library and the client packages
share; scripts/generate-facts.py writes them into each language. The committed files must be
what the facts make, and a fact changed without a regeneration must be caught."""

import shutil
import subprocess
import sys

from conftest import ROOT

GENERATED = ["src/facts.rs", "functions/parts/04-facts.lua",
             "clients/python/src/redis_rl/_facts.py", "clients/node/src/facts.ts",
             "clients/nginx/lib/resty/rl/facts.lua", "clients/rust/src/facts.rs"]
NOTICE = "generated from facts/rl.toml by scripts/generate-facts.py: do not edit"


def check(root):
    return subprocess.run([sys.executable, str(root / "scripts/generate-facts.py"), "--check"],
                          capture_output=True, text=True)


def copy_of_the_facts(dest):
    """facts/rl.toml, the generator and the generated files, under `dest`."""
    for path in ["facts/rl.toml", "scripts/generate-facts.py", *GENERATED]:
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, dest / path)


def test_the_generated_files_are_the_facts():
    out = check(ROOT)
    assert out.returncode == 0, out.stderr


def test_each_generated_file_says_so_on_its_first_line():
    for path in GENERATED:
        first = (ROOT / path).read_text().split("\n", 1)[0]
        assert NOTICE in first, f"{path}: {first}"


def test_a_fact_changed_without_a_regeneration_is_caught(tmp_path):
    copy_of_the_facts(tmp_path)
    assert check(tmp_path).returncode == 0
    facts = tmp_path / "facts/rl.toml"
    facts.write_text(facts.read_text().replace("max_layers = 64", "max_layers = 65"))
    out = check(tmp_path)
    assert out.returncode == 1
    for path in GENERATED:
        assert f"{path} is stale" in out.stderr, out.stderr


def test_a_generated_file_edited_by_hand_is_caught(tmp_path):
    copy_of_the_facts(tmp_path)
    part = tmp_path / "functions/parts/04-facts.lua"
    part.write_text(part.read_text().replace("MAX_LAYERS = 64", "MAX_LAYERS = 65"))
    out = check(tmp_path)
    assert out.returncode == 1 and "functions/parts/04-facts.lua is stale" in out.stderr, out.stderr

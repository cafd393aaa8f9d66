"""CONTRIBUTING's "module API behind one wall": only the files it lists name a raw pointer or
call the module API. The list is read from CONTRIBUTING and compared with the source tree."""

import re
import subprocess

from conftest import ROOT

PATTERN = re.compile(r"raw::|RedisModuleCtx|api!")


def listed():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    block = text.split("$ grep -rln 'raw::\\|RedisModuleCtx\\|api!' src | sort\n", 1)[1]
    return block.split("```", 1)[0].split()


def test_only_the_listed_files_reach_the_module_api():
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.rs")
                   if PATTERN.search(p.read_text()))
    assert found == listed()


def test_the_listed_command_prints_the_list():
    out = subprocess.run("grep -rln 'raw::\\|RedisModuleCtx\\|api!' src | sort", shell=True,
                         cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == listed()

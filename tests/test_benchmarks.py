"""The benchmark scripts follow the package's layout: they import cleanly, their package imports are at the top, and none
names a module the re-layout removed."""

import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
REMOVED = (
    "deid_nb.index",
    "deid_nb.analysis",
    "deid_nb.search",
    "deid_nb.search_textattack",
    "deid_nb.model",
    "deid_nb.training",
)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_follows_the_layout(script):
    "Package imports at module level only, and no removed module named anywhere in the script."
    text = script.read_text(encoding="utf-8")
    assert not re.findall(r"^\s{4,}(?:from deid_nb[\w.]* import|import deid_nb)", text, re.M), (
        f"{script.name}: imports inside functions"
    )
    for removed in REMOVED:
        assert not re.search(rf"\b{re.escape(removed)}\b(?![\w.])", text), f"{script.name} names the removed {removed}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_imports(script, monkeypatch):
    "Each script imports (its folder on sys.path, as when it is run) and, except the results helper, has a `main`."
    monkeypatch.syspath_prepend(str(script.parent))
    module = importlib.import_module(script.stem)
    assert script.stem == "results" or callable(module.main)
    for name in [n for n in sys.modules if n == script.stem]:
        monkeypatch.delitem(sys.modules, name)

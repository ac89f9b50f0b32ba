"""A notebook reruns only when the code it imports, its data or its parameters changed: the runner's task fingerprint
(`deid_nb.run_plan.task_fingerprint`) hashes the package modules the notebook imports, with what they import in turn."""

import ast
import shutil
from pathlib import Path

import pytest

import deid_nb
from deid_nb.experiments import code_version, module_closure
from deid_nb.run_plan import experiment_notebooks, notebook_modules, task_fingerprint

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(deid_nb.__file__).resolve().parent


@pytest.fixture
def package(tmp_path, monkeypatch):
    "A copy of the package to edit, and a data directory of its own (the data is part of the fingerprint too)."
    monkeypatch.setenv("DEID_NB_DATA", str(tmp_path / "data"))
    copy = tmp_path / "deid_nb"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "resources"))
    return copy


def _edit(path: Path):
    "An edit of the code (a comment or a docstring would not count: see `test_a_comment_or_docstring_keeps_the_key`)."
    path.write_text(path.read_text(encoding="utf-8") + "\n_an_edit = 1\n", encoding="utf-8")


def test_an_unrelated_edit_keeps_a_notebook_done_and_an_imported_one_does_not(package):
    "The data overview imports the data loaders, not NN DeID: editing NN DeID's search leaves its key, editing data.py does not."
    notebook = ROOT / "nbs" / "63_data_overview.ipynb"
    before = task_fingerprint(notebook, {"dataset": "all", "size": "default"}, package)
    _edit(package / "nn_deid" / "search.py")
    _edit(package / "site.py")
    assert task_fingerprint(notebook, {"dataset": "all", "size": "default"}, package) == before
    _edit(package / "people.py")  # imported by what the notebook imports (deid_nb.data), not by the notebook itself
    assert task_fingerprint(notebook, {"dataset": "all", "size": "default"}, package) != before


def test_an_edit_to_a_module_a_table_imports_changes_its_key(package):
    "Table 2 imports NN DeID's experiments, which import the search: an edit of the search reruns it."
    notebook = ROOT / "nbs" / "21_table2_pareto.ipynb"
    before = task_fingerprint(notebook, {"dataset": "wikibio_2000", "size": "default"}, package)
    _edit(package / "sanitize" / "risk_indicators.py")
    assert task_fingerprint(notebook, {"dataset": "wikibio_2000", "size": "default"}, package) == before
    _edit(package / "nn_deid" / "search.py")
    assert task_fingerprint(notebook, {"dataset": "wikibio_2000", "size": "default"}, package) != before


def test_a_comment_or_docstring_keeps_the_key(package):
    "Rewording a docstring or a comment, or a cell's new id in an exported `# %%` line, reruns nothing; code does."
    notebook = ROOT / "nbs" / "21_table2_pareto.ipynb"
    search = package / "nn_deid" / "search.py"
    before = task_fingerprint(notebook, {"dataset": "wikibio_2000", "size": "default"}, package)
    source = search.read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    reworded = source.replace(docstring, docstring + " Reworded.", 1).replace("# %% ", "# %% ../moved/ ", 1)
    search.write_text(reworded + "\n# a comment\n", encoding="utf-8")
    assert reworded != source
    assert task_fingerprint(notebook, {"dataset": "wikibio_2000", "size": "default"}, package) == before
    _edit(search)
    assert task_fingerprint(notebook, {"dataset": "wikibio_2000", "size": "default"}, package) != before


@pytest.mark.parametrize("experiment", experiment_notebooks(ROOT / "nbs"), ids=lambda e: e.name)
def test_every_experiment_imports_the_package_and_not_all_of_it(experiment):
    "Each experiment's code is a proper part of the package: some of its modules (so the key knows the code), never the machine room."
    files = {p.relative_to(PACKAGE).as_posix() for p in module_closure(notebook_modules(experiment.path))}
    assert "experiments.py" in files, files
    assert not files & {"cli.py", "commands.py", "site.py", "reproduce.py", "run_plan.py", "readme.py"}, files


def test_the_whole_package_version_covers_every_module(tmp_path):
    "`code_version()` without modules hashes the whole package (an edit anywhere changes it); a module list, less."
    copy = tmp_path / "deid_nb"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_version(None, copy)
    assert before == code_version()  # the installed package's version, computed once per process, is its sources'
    shards = copy / "wikibio_shards.py"  # a module no experiment imports
    shards.write_text(shards.read_text(encoding="utf-8") + "\nEDITED = 1\n", encoding="utf-8")
    assert code_version(None, copy) != before
    assert code_version(["deid_nb.masking"]) != code_version()

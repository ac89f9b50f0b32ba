"""Issue 33 (friction): a misspelt `overrides` key is an error in every experiment notebook, never silently ignored, and each notebook
declares its run sizes so that `deid-nb reproduce --overrides` is checked before anything runs. Read from the notebooks' code: no
kernel starts."""

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from deid_nb.experiments import apply_overrides
from deid_nb.nn_deid.runs import RUN_SIZES as NN_DEID_RUN_SIZES, RunSize
from deid_nb.run_plan import experiment_notebooks
from deid_nb.sanitize.risk_experiment import RUN_SIZES as RISK_RUN_SIZES

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = experiment_notebooks(ROOT / "nbs")
CHECKED_BY = (
    "apply_overrides(",
    "run_size(",
    "run_risk_experiment(",
)  # each refuses a name that is not a size (apply_overrides)


def _cells(path: Path) -> list[tuple[bool, str]]:
    "(is the papermill parameters cell, source) of each code cell."
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        ("parameters" in c["metadata"].get("tags", []), "".join(c["source"])) for c in cells if c["cell_type"] == "code"
    ]


def _parameters(path: Path) -> set[str]:
    return {
        name
        for is_parameters, source in _cells(path)
        if is_parameters
        for name in re.findall(r"^(\w+) =", source, re.M)
    }


def _code(path: Path) -> str:
    "The notebook's code outside the parameters cell, IPython magics left out."
    lines = [line for is_parameters, source in _cells(path) if not is_parameters for line in source.splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=lambda e: e.name)
def test_overrides_reach_only_a_check(experiment):
    "Each experiment takes `overrides` and `seed`, and passes `overrides` only to a function that refuses unknown names."
    assert {"overrides", "seed"} <= _parameters(experiment.path)
    uses = [line for line in _code(experiment.path).splitlines() if re.search(r"\boverrides\b", line.split("#")[0])]
    assert uses, f"{experiment.name} never reads its overrides"
    assert all(any(check in line for check in CHECKED_BY) for line in uses), uses


def _literal_sizes(tree: ast.Module) -> list[set[str]]:
    "The names of each run size's sizes in the notebook's own `RUN_SIZES = {size name: dict or dataclass}`."
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    sizes = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "RUN_SIZES" for t in node.targets)
    )
    found = []
    for size in sizes.values:
        if isinstance(size, ast.Dict):
            found.append({key.value for key in size.keys})
        elif size.func.id == "dict":
            found.append({keyword.arg for keyword in size.keywords})
        else:  # a dataclass of the notebook: its annotated fields
            found.append({n.target.id for n in classes[size.func.id].body if isinstance(n, ast.AnnAssign)} - {"name"})
    return found


def _sizes(path: Path) -> list[set[str]]:
    "What the notebook's `overrides` are checked against, one set per run size."
    code = _code(path)
    if re.search(r"\brun_size\(size, overrides\)", code):  # NN DeID's sizes (deid_nb.nn_deid.runs)
        return [{f.name for f in dataclasses.fields(RunSize)} - {"name"}]
    if "run_risk_experiment(" in code:
        return [set(sizes) for sizes in RISK_RUN_SIZES.values()]
    if "apply_overrides({}, overrides)" in code:
        return [set()]
    return _literal_sizes(ast.parse(code))


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=lambda e: e.name)
def test_declared_sizes_are_the_notebooks_own(experiment):
    "The `sizes` a notebook declares (what `reproduce --overrides` is checked against) are what its code accepts, in every run size."
    found = _sizes(experiment.path)
    assert all(names == found[0] for names in found), f"{experiment.name}: its run sizes have different sizes"
    assert sorted(experiment.sizes) == sorted(found[0])


def test_a_misspelt_override_is_refused():
    "The shared check, on a notebook's dict of sizes and on NN DeID's dataclass."
    with pytest.raises(
        ValueError, match=r"unknown run-size override\(s\) \['documnets'\]; the sizes are \['documents', 'level'\]"
    ):
        apply_overrides({"documents": 3, "level": "L3P"}, {"documnets": 10})
    with pytest.raises(ValueError, match=r"unknown run-size override\(s\) \['n_serch'\]"):
        apply_overrides(NN_DEID_RUN_SIZES["quick"], {"n_serch": 3})

"""Issue 35, item 6: two run sizes that say what they are. `full` is a size everywhere (the command line, the runner, every
experiment notebook); a notebook whose full size is its default runs as the default task, one with a full size of its own
declares what it adds and writes its tables beside the default's under `_full` names. Read from the notebooks: no kernel starts."""

import ast
import contextlib
import dataclasses
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from deid_nb.cli import main
from deid_nb.experiments import SIZE_NAMES, save_table, sized_stem
from deid_nb.nn_deid.runs import RUN_SIZES as NN_DEID_RUN_SIZES
from deid_nb.reproduce import _parameters
from deid_nb.results_catalogue import RESULT_SECTIONS
from deid_nb.results_pages import MINI_LINE, entry_markdown, system_page
from deid_nb.run_plan import RunPlan, experiment_notebooks, task_fingerprint
from deid_nb.sanitize.risk_experiment import RUN_SIZES as RISK_RUN_SIZES

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = experiment_notebooks(ROOT / "nbs")


def _code(path: Path) -> str:
    "The notebook's code outside the parameters cell, IPython magics left out."
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = [
        line
        for c in cells
        if c["cell_type"] == "code" and "parameters" not in c["metadata"].get("tags", [])
        for line in "".join(c["source"]).splitlines()
    ]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def _is_default(node: ast.AST) -> bool:
    "Whether `node` is `RUN_SIZES['default']` itself (the full size is the very same object)."
    return ast.unparse(node) == "RUN_SIZES['default']"


def _own_full_size(path: Path) -> bool | None:
    "Whether the notebook's full size differs from its default, read from its code (None: it has no full size)."
    code = _code(path)
    if re.search(r"\brun_size\(size, overrides\)", code):  # NN DeID's sizes: full lifts two cuts, read by 22 and 26
        differing = {
            f.name
            for f in dataclasses.fields(NN_DEID_RUN_SIZES["full"])
            if getattr(NN_DEID_RUN_SIZES["full"], f.name) != getattr(NN_DEID_RUN_SIZES["default"], f.name)
        } - {"name"}
        return any(f"settings.{name}" in code for name in differing)
    if "run_risk_experiment(" in code:
        return RISK_RUN_SIZES["full"] != RISK_RUN_SIZES["default"]
    if "apply_overrides({}, overrides)" in code:  # no run sizes: whatever the size, the same run
        return False
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "RUN_SIZES" and isinstance(node.value, ast.Dict):
            literal = {getattr(k, "value", None): v for k, v in zip(node.value.keys, node.value.values)}
            if "full" in literal:
                return not _is_default(literal["full"])
        if isinstance(target, ast.Subscript) and ast.unparse(target) == "RUN_SIZES['full']":
            return not _is_default(node.value)
    return None


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=lambda e: e.name)
def test_every_experiment_has_a_full_size_and_declares_it_when_its_own(experiment):
    "A full size in every notebook; the `full` declaration (what the runner reads) exactly where it differs from the default."
    own = _own_full_size(experiment.path)
    assert own is not None, f"{experiment.name}: no full size (add RUN_SIZES['full'] = RUN_SIZES['default'])"
    assert bool(experiment.full) == own, f"{experiment.name}: declares {experiment.full!r}, its code says {own}"


def test_the_papers_sizes_where_the_default_cuts_them():
    "Issues 34-35: Table 2's protocol and Figs. 3-4, Table 4 on its masks; every document; Fig. 5 over seeds; the recogniser."
    declared = {e.name for e in EXPERIMENTS if e.full}
    assert {
        "21_table2_pareto",
        "23_fig3_two_reidentifiers",
        "24_fig4_pos",
        "25_table4_quasi_identifiers",
        "35_table3_recogniser",
        "36_table5_indicators",
        "37_table7_combinations",
        "38_table6_indicators",
        "46_infill_tables",
        "47_table5_annotated",
        "49_lm_scoring",
        "57_fig5_adversarial",
    } <= declared
    assert RISK_RUN_SIZES["full"]["perturb_docs"] is None and RISK_RUN_SIZES["default"]["perturb_docs"] == 23
    assert not declared & {"20_table1_motivating", "45_retrieval_tables"}  # every document


def test_full_is_a_size_of_the_command_line_and_lists_every_experiment():
    "`deid-nb reproduce --size full --list`: every experiment notebook, with what its full size adds or that it is its default."
    assert SIZE_NAMES == ("quick", "default", "full")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["reproduce", "--size", "full", "--list"]) == 0
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == [e.name for e in EXPERIMENTS]
    for experiment, line in zip(EXPERIMENTS, lines):
        assert line.endswith(f"— full: {experiment.full}" if experiment.full else "— full = default"), line


def test_wikibio_mini_is_left_to_the_full_run_only_by_26_and_28():
    "The NN DeID page's WikiBio-mini line (`MINI_LINE`) is true of the declarations: only a full run executes 26 and 28 there."
    left = {e.name: e.full_only for e in EXPERIMENTS if e.full_only}
    assert left == {"26_appendixB_beam_vs_greedy": ("wikibio_mini",), "28_reidentifier_levers": ("wikibio_mini",)}
    assert all(f"(nbs/{name[:2]})" in MINI_LINE for name in left)
    on_mini = {notebook.stem for notebook, dataset in RunPlan(EXPERIMENTS).tasks() if dataset == "wikibio_mini"}
    assert on_mini and not on_mini & set(left)
    full = RunPlan(EXPERIMENTS, "full")
    assert {full.task_size(n, "wikibio_mini") for n, _ in full.tasks() if n.stem in left} == {"default"}  # names kept
    assert MINI_LINE in system_page(ROOT / "figures", "nn_deid").splitlines()


def test_a_notebook_whose_full_size_is_its_default_is_the_default_task():
    "At full, such a notebook has the default task's parameters, executed copy and fingerprint, so a done default is reused."
    full, default = RunPlan(EXPERIMENTS, "full"), RunPlan(EXPERIMENTS, "default")
    for notebook, dataset in full.tasks():
        declared = next(e for e in EXPERIMENTS if e.path == notebook)
        own = declared.full and dataset not in declared.full_only  # a dataset moved to the full run: its default task
        assert full.task_size(notebook, dataset) == ("full" if own else "default")
        same = _parameters(full, notebook, dataset) == _parameters(default, notebook, dataset)
        assert (
            same != bool(own)
            and (full.output_path(notebook, dataset) == default.output_path(notebook, dataset)) == same
        )
    table1 = ROOT / "nbs" / "20_table1_motivating.ipynb"
    assert task_fingerprint(table1, _parameters(full, table1, "wikibio_2000")) == task_fingerprint(
        table1, _parameters(default, table1, "wikibio_2000")
    )


def test_a_full_size_of_its_own_writes_differently_named_tables(tmp_path, monkeypatch):
    "Its tables go beside the default's under `_full` names (a size name or NN DeID's full sizes alike); the pages say which is which."
    monkeypatch.setenv("DEID_NB_FIGURES", str(tmp_path))
    default = save_table(
        pd.DataFrame({"a": [1.0]}), "table5_indicators", "wiki_annotated", "default", system="sanitize"
    )
    full = save_table(pd.DataFrame({"a": [2.0]}), "table5_indicators", "wiki_annotated", "full", system="sanitize")
    assert [p.name for p in (*default, *full)] == [
        "table5_indicators_wiki_annotated.csv",
        "table5_indicators_wiki_annotated.md",
        "table5_indicators_full_wiki_annotated.csv",
        "table5_indicators_full_wiki_annotated.md",
    ]
    assert pd.read_csv(default[0]).a.tolist() == [1.0] and pd.read_csv(full[0]).a.tolist() == [2.0]
    ablation = save_table(
        pd.DataFrame({"a": [3.0]}), "table3", "wikibio_2000", NN_DEID_RUN_SIZES["full"], system="nn_deid"
    )
    assert ablation[0].name == "table3_full_wikibio_2000.csv"
    page = entry_markdown(tmp_path / "sanitize", "table5_indicators", "Table 5", "Indicators.", False)
    assert (
        page.index("## Table 5\n")
        < page.index("| 1.0 |")
        < page.index("## Table 5 (full size)")
        < page.index("| 2.0 |")
    )


def test_committed_full_size_outputs_follow_the_rule():
    "Every `_full` table or figure in figures/ is `sized_stem(stem, 'full')` of a catalogued stem, so its page shows it."
    stems = {system: [stem for stem, *_ in entries] for system, entries in RESULT_SECTIONS.items()}
    for path in (ROOT / "figures").glob("*/*_full_*"):
        assert any(path.name.startswith(sized_stem(stem, "full") + "_") for stem in stems.get(path.parent.name, [])), (
            path
        )

"""The front door and the results pages: a README written by a person, short, with two generated regions; the results on
their own pages beside the figures, exactly what `deid_nb.results_pages` and `deid_nb.readme` write from the committed tables."""

import json
import re
from pathlib import Path

import pytest

from deid_nb.experiments import SYSTEMS
from deid_nb.readme import full_size_markdown, headline_markdown, markers
from deid_nb.results_pages import result_pages
from deid_nb.run_plan import RunPlan, experiment_notebooks

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "figures"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_short():
    "The README is a front door (what it is, install, use, where to read on): at most 250 lines."
    assert len(README.splitlines()) <= 250


def region(name: str) -> str:
    "What the README holds between `name`'s markers."
    start, end = markers(name)
    return README.split(start, 1)[1].split(end, 1)[0].strip()


def test_readme_has_exactly_two_generated_regions_and_they_are_up_to_date():
    "Two generated regions, the headline and the full size's time, each holding what its generator writes from the committed tables."
    assert re.findall(r"<!-- (\w+):start -->", README) == ["headline", "full_size"]
    assert re.findall(r"<!-- (\w+):end -->", README) == ["headline", "full_size"]
    assert region("headline") == headline_markdown(FIGURES).strip()
    tasks = [(path.stem, dataset) for path, dataset in RunPlan(experiment_notebooks(ROOT / "nbs"), "full").tasks()]
    assert region("full_size") == full_size_markdown(FIGURES, tasks).strip()


def test_readme_sections():
    "The sections a reader looks for, Scaling up under its own heading and short."
    headings = re.findall(r"^## (.+)$", README, re.M)
    for needed in (
        "The four systems",
        "Install",
        "Two commands",
        "Quick start",
        "Start here",
        "Reproduce",
        "Scaling up",
        "Data and licences",
        "Cite",
    ):
        assert needed in headings, needed
    scaling = README.split("\n## Scaling up\n", 1)[1].split("\n## ", 1)[0]
    assert len(scaling.strip().splitlines()) + 1 <= 25
    assert "from deid_nb import Deidentifier, people_from_table" in README


def test_readme_links_resolve():
    "Every relative link and image of the README names a file or folder of the checkout."
    targets = re.findall(r"\]\(((?!https?://)[^)#\s]+)\)", README)
    assert targets
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []


@pytest.mark.parametrize("path", sorted(result_pages(FIGURES)), ids=lambda p: p.relative_to(FIGURES).as_posix())
def test_results_pages_are_up_to_date(path):
    "Each committed page is what `deid_nb.results_pages.write_result_pages` writes from the committed files (rerun it after a change)."
    assert path.exists(), f"{path} is missing: run deid_nb.results_pages.write_result_pages('figures')"
    assert path.read_text(encoding="utf-8") == result_pages(FIGURES)[path]


def test_every_system_has_its_folder_and_page_and_nothing_lies_outside():
    "figures/ holds one folder per system (and scale/, the benchmarks'), its index and the recorded times (the runs', the full size's tasks') — no loose tables."
    assert {p.name for p in FIGURES.iterdir()} == {*SYSTEMS, "scale", "README.md", "timings.csv", "full_size_tasks.csv"}
    for system in SYSTEMS:
        assert (FIGURES / system / "README.md").exists()
        assert "Other outputs" not in (FIGURES / system / "README.md").read_text(
            encoding="utf-8"
        )  # every file has its entry


def test_page_links_resolve():
    "Every table and figure a page links sits beside it."
    for path in result_pages(FIGURES):
        for target in re.findall(r"\]\(((?!https?://)[^)#\s]+)\)", path.read_text(encoding="utf-8")):
            assert (path.parent / target).exists(), (path, target)


def test_no_chapter_keeps_a_copy_of_a_measurement():
    "A library chapter that reads the committed figures keeps no output of it: the runner rewrites them, a copy would go stale."
    for path in sorted((ROOT / "nbs").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if notebook["metadata"].get("deid_nb", {}).get("experiment"):
            continue  # experiment notebooks are regenerated with their figures
        for cell in notebook["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and "get_figures_dir()" in source and "#| export" not in source:
                assert not cell["outputs"], f"{path.name}, cell {cell.get('id')}: a kept copy of the committed figures"

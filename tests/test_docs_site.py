"""The docs site as a fresh clone builds it: no runs/, no artifacts/, nothing executed. Experiment pages show the tables and
figures their last default run committed; library chapters their stored outputs, with no warning boxes and no directives; a
search index and an API reference; nothing loaded from another site. Quick by default (a few pages; the index, the API page
and the search index are always whole); DEID_NB_FULL_DOCS=1 renders every page."""

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from deid_nb.pages import with_committed_results
from deid_nb.run_plan import experiment_notebooks
from deid_nb.site import build_site, mathjax_dir

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["03_masking", "93a_site", "13_hybrid", "21_table2_pareto"]
TRACKED = ("nbs", "figures")


def _fresh_clone(target: Path) -> Path:
    "The notebooks and figures as a clone has them: git's tracked and not-ignored files (all files outside a git checkout)."
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *TRACKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    files = (
        listed.stdout.split()
        if listed.returncode == 0 and listed.stdout
        else [p.relative_to(ROOT).as_posix() for d in TRACKED for p in (ROOT / d).rglob("*") if p.is_file()]
    )
    for name in files:
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    clone = _fresh_clone(tmp_path_factory.mktemp("clone"))
    assert not (clone / "runs").exists() and not (clone / "artifacts").exists()
    only = None if os.environ.get("DEID_NB_FULL_DOCS") == "1" else QUICK
    index = build_site(clone / "_site", clone / "nbs", clone / "runs", clone / "figures", execute=False, only=only)
    return index.parent


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_experiment_page_shows_its_committed_table_and_figure(site):
    page = (site / "21_table2_pareto.html").read_text(encoding="utf-8")
    assert "committed outputs of the last default run" in page
    figure = "figures/nn_deid/fig2_pareto_wikibio_2000.png"
    assert re.search(rf'<img[^>]+src="{re.escape(figure)}"', page) and (site / figure).exists()
    table = (ROOT / "figures" / "nn_deid" / "table2_wikibio_2000.md").read_text(encoding="utf-8").splitlines()
    method = table[2].strip("| ").split("|")[1].strip()  # the first row's method, as the page's <table> has it
    assert method == "No redaction" and f"<td>{method}</td>" in re.sub(r"<td[^>]*>", "<td>", page)
    assert "In&nbsp;[" not in page and "In [ ]:" not in page  # no prompts of cells that never ran


def test_every_experiment_has_committed_results_in_a_fresh_clone():
    "Each experiment notebook's page, without a run, gets at least one committed table or figure after the cell that saved it."
    for experiment in experiment_notebooks(ROOT / "nbs"):
        notebook = nbformat.read(experiment.path, as_version=4)
        shown = with_committed_results(notebook, experiment.name, ROOT / "figures", list(experiment.datasets))
        committed = [c for c in shown.cells if c.metadata.get("deid_nb") == "committed"]
        assert len(committed) >= 2 and "figures/" in committed[1].source, experiment.name


def test_no_warning_boxes_and_no_directives(site):
    for path in _pages(site):
        text = path.read_text(encoding="utf-8")
        assert "TqdmWarning: IProgress" not in text and "Please update jupyter" not in text, (
            path
        )  # the warning box (code may name it)
        assert not re.search(r'<span class="c1">#\|', text), (
            path
        )  # no directive line in the code shown (prose may name them)
        assert 'data-mime-type="application/vnd.jupyter.stderr"' not in text, path


def test_library_chapter_shows_code_and_stored_outputs(site):
    page = html.unescape(re.sub(r"<[^>]+>", "", (site / "93a_site.html").read_text(encoding="utf-8")))
    assert (
        "def build_site(" in page and "import json, tempfile" not in page
    )  # an exported cell shown, the hidden one not
    masking = (site / "03_masking.html").read_text(encoding="utf-8")
    assert "jp-OutputArea-output" in masking and "blacksmith" in masking  # its stored outputs


def test_search_index_and_api_reference(site):
    entries = json.loads((site / "search.json").read_text(encoding="utf-8"))
    urls = {e["url"] for e in entries}
    notebooks = sorted(p.stem for p in (ROOT / "nbs").glob("[0-9]*.ipynb"))
    assert {f"{n}.html" for n in notebooks} <= urls  # every page is searchable, rendered or not
    assert "api.html#deid_nb.site.build_site" in urls and "figures/nn_deid/README.html" in urls
    assert (site / "search_index.js").read_text(encoding="utf-8").startswith("window.DEID_NB_SEARCH=")
    assert 'id="deid-nb-search"' in (site / "03_masking.html").read_text(encoding="utf-8")
    api = (site / "api.html").read_text(encoding="utf-8")
    for module in (ROOT / "deid_nb").rglob("*.py"):
        names = re.search(r"^__all__ = (\[.*?\])", module.read_text(encoding="utf-8"), re.S | re.M)
        if module.name in ("_modidx.py", "__main__.py") or not names:
            continue
        dotted = ".".join(module.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for name in eval(names.group(1)):
            assert f'id="{dotted}.{name}"' in api, f"{dotted}.{name} is not in the API reference"
    assert 'href="93a_site.html"' in api


def test_offline(site):
    "No page loads a script, style or image from another site; math comes from the site's own MathJax when it is installed."
    for path in _pages(site):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)=[\"']https?://", text), path
        assert "cdnjs" not in text and "unpkg.com" not in text, path
    if mathjax_dir():
        assert (site / "_static" / "mathjax" / "MathJax.js").exists()
        assert 'src="_static/mathjax/MathJax.js' in (site / "13_hybrid.html").read_text(encoding="utf-8")
        assert 'src="../../_static/mathjax/MathJax.js' in (site / "figures" / "nn_deid" / "README.html").read_text(
            encoding="utf-8"
        )


_MACHINE = re.compile(
    r"/(?:work|home|root|tmp|Users)/|[A-Z]:\\\\|Wall time|CPU times| at 0x[0-9a-f]+|\b\d+\.\d+ ?m?s\b"
)


@pytest.mark.parametrize("notebook", sorted((ROOT / "nbs").glob("*.ipynb")), ids=lambda p: p.stem)
def test_stored_outputs_are_small_and_portable(notebook):
    "A notebook keeps only small outputs, without stderr, errors, execution counts, paths of a machine, addresses or timings."
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    assert all(c.get("execution_count") is None for c in cells if c["cell_type"] == "code")
    assert not [o for o in outputs if o["output_type"] == "error" or o.get("name") == "stderr"]
    assert len(json.dumps(outputs)) <= 400_000, "stored outputs over 400 kB"
    for output in outputs:
        text = json.dumps({k: v for k, v in output.get("data", {}).items() if k.startswith("text/")}) + json.dumps(
            output.get("text", "")
        )
        assert not _MACHINE.search(text), (notebook.name, _MACHINE.search(text).group(0))
        assert output.get("execution_count") is None


def _shared_data_text() -> str:
    "Every document of the shared data directory, lower-cased, in one string (empty without `$DEID_NB_DATA`)."
    root = Path(os.environ.get("DEID_NB_DATA", "/nonexistent"))
    files = [
        root / "wiki_annotated" / "wiki_test.json",
        root / "wikibio_full_sample" / "wikibio-2000.jsonl",
        root / "wikibio_mini" / "wikibio-mini.csv",
        *sorted((root / "wikibio_raw_sample").glob("*/*")),
    ]
    return "\n".join(f.read_text(encoding="utf-8", errors="ignore").lower() for f in files if f.is_file())


def test_stored_outputs_quote_no_shared_data():
    "The data is never copied into the project: no stored output holds a 25-character stretch of a dataset's text."
    data = _shared_data_text()
    if not data:
        pytest.skip("DEID_NB_DATA with the shared data is not set")
    for notebook in sorted((ROOT / "nbs").glob("*.ipynb")):
        for cell in nbformat.read(notebook, as_version=4).cells:
            for output in cell.get("outputs", []):
                shown = output.get("text", "") + "".join(
                    str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")
                )
                pieces = [p.strip() for p in re.split(r"[\n\"'|,()\[\]{}<>]", shown.lower()) if len(p.strip()) >= 25]
                quoted = [p for p in pieces if p in data]
                assert not quoted, f"{notebook.name}: a stored output quotes the shared data: {quoted[0][:60]!r}"

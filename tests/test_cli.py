"""Issue 32: a report card that trusts nothing, and a command line that fails fast. Each test names the item it covers; all run
on 8 WikiBio-2000 people with BM25 (no training), and every slow step is booby-trapped where the test is about failing first."""

import contextlib
import dataclasses
import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import deid_nb.reproduce
from deid_nb.core import WORD_PATTERN
from deid_nb.data import load_dataset
from deid_nb.nn_deid.pipeline import Deidentifier
from deid_nb.nn_deid.shards import write_records
from deid_nb.reidentifier import BM25Reidentifier
from deid_nb import cli, commands
from deid_nb.report.card import background_retriever, report_card
from deid_nb.report.redactions import read_redaction
from deid_nb.cli import main

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = load_dataset("wikibio_2000").people[:8]


def _name(person) -> str:
    "The person's name as the document writes it: its first two words (WikiBio documents open with the name)."
    first = list(WORD_PATTERN.finditer(person.document))[:2]
    return person.document[first[0].start() : first[1].end()]


def presidio_style(person) -> str:
    "What Presidio's default operator writes: one <PERSON> per (multi-word) name."
    return person.document.replace(_name(person), "<PERSON>")


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture()
def folder(tmp_path):
    pd.DataFrame([{"id": p.person_id, "document": p.document, **p.profile} for p in PEOPLE]).to_csv(
        tmp_path / "people.csv", index=False
    )
    return tmp_path


@pytest.fixture()
def no_models(monkeypatch):
    "Any model load or training fails the test: what is checked must be checked before."

    def trap(*args, **kwargs):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(Deidentifier, "fit", classmethod(trap))
    monkeypatch.setattr(Deidentifier, "from_pretrained", classmethod(trap))
    monkeypatch.setattr(commands, "DenseReranker", trap)
    monkeypatch.setattr(deid_nb.reproduce, "reproduce", trap)


def run(arguments: list) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in arguments])
    return status, out.getvalue(), err.getvalue()


def report(folder, *files, extra=()):
    return run(
        [
            "report",
            *files,
            "--people",
            folder / "people.csv",
            "--reidentifiers",
            "bm25",
            "--no-infill",
            *extra,
            "-o",
            folder / "card",
        ]
    )


# ---------------------------------------------------------------- 1. the published text is scored; spans are checked against it
def test_untouched_text_with_masking_spans_is_refused(folder, no_models):
    "Today this file scores 0% re-identified: its spans are scored, not its text."
    liar = _jsonl(
        folder / "liar.jsonl",
        [
            {"id": p.person_id, "text": p.document, "spans": [[0, len(_name(p))]], "certificate": {"goal_met": True}}
            for p in PEOPLE
        ],
    )
    status, _, errors = report(folder, liar)
    assert status == 1 and f"{liar}: line 1: 'text' does not match 'spans'" in errors and len(errors.splitlines()) == 1


def test_the_text_is_what_is_scored(folder):
    plain = _jsonl(
        folder / "plain.jsonl",
        [{"id": p.person_id, "text": p.document, "certificate": {"goal_met": True}} for p in PEOPLE],
    )
    assert report(folder, plain)[0] == 0
    row = pd.read_csv(folder / "card" / "report_card.csv").set_index("method").loc["plain"]
    assert row.ensemble_reid == 100.0 and row.percent_masked == 0.0


# ---------------------------------------------------------------- 2. certificates: claimed, or verified by the caller
def test_certificates_are_claimed_not_met(folder):
    masked = _jsonl(
        folder / "masked.jsonl",
        [{"id": p.person_id, "text": presidio_style(p), "certificate": {"goal_met": True}} for p in PEOPLE],
    )
    presidio = _jsonl(folder / "presidio.jsonl", [{"id": p.person_id, "text": presidio_style(p)} for p in PEOPLE])
    assert report(folder, masked, presidio)[0] == 0
    card = pd.read_csv(folder / "card" / "report_card.csv").set_index("method")
    assert card.loc["masked", "certificates_claimed"] == 100.0 and card.certificates_verified.isna().all()
    assert pd.isna(card.loc["presidio", "certificates_claimed"])
    markdown = (folder / "card" / "report_card.md").read_text()
    assert (
        "Certificates claimed %" in markdown
        and "Certificates verified %" in markdown
        and "Certificates met" not in markdown
    )
    header, row = (
        [c.strip() for c in line.split("|")]
        for line in markdown.splitlines()
        if line.startswith(("| Redaction", "| presidio"))
    )
    shown = dict(zip(header, row))
    assert shown["Certificates claimed %"] == shown["Certificates verified %"] == "–"


def test_verified_certificates_hook():
    read = {"ours": {p.person_id: presidio_style(p) for p in PEOPLE}}
    card = report_card(
        read,
        PEOPLE,
        BM25Reidentifier(PEOPLE),
        include_original=False,
        certificates={"ours": {p.person_id: True for p in PEOPLE}},
        certificates_verified={"ours": {p.person_id: i < 2 for i, p in enumerate(PEOPLE)}},
    )
    assert card.certificates_claimed[0] == 100.0 and card.certificates_verified[0] == 25.0


# ---------------------------------------------------------------- 3. any tool's output: multi-word placeholders, substitutions
def _aligned_share(texts: dict) -> float:
    "The share of the original's words each text hides, by hand: the name's words in every place it was replaced."
    shares = [
        len(WORD_PATTERN.findall(_name(p))) * p.document.count(_name(p)) / len(WORD_PATTERN.findall(p.document))
        for p in PEOPLE
    ]
    return 100 * sum(shares) / len(shares)


@pytest.mark.parametrize("replacement", ["<PERSON>", "PERSON_1", "the footballer"])
def test_any_tool_output_is_scored_as_changed_words(folder, replacement):
    "Presidio's one <PERSON> per name (today: counted as one word, then a crash in infilling), pseudonyms and rewritten words."
    path = _jsonl(
        folder / "tool.jsonl", [{"id": p.person_id, "text": p.document.replace(_name(p), replacement)} for p in PEOPLE]
    )
    read = read_redaction(path, PEOPLE)
    card = report_card(
        {"tool": read}, PEOPLE, BM25Reidentifier(PEOPLE), retriever=background_retriever(PEOPLE), include_original=False
    )
    assert card.percent_masked[0] == pytest.approx(_aligned_share(read.texts))
    assert card.spans[0] >= len(PEOPLE) and 0 <= card.reid_infilled[0] <= 100
    assert read.hide_length[
        PEOPLE[0].person_id
    ]  # one placeholder (or rewrite) for a two-word name: the attacker sees one mask


def test_presidio_style_file_through_the_cli(folder):
    presidio = _jsonl(folder / "presidio.jsonl", [{"id": p.person_id, "text": presidio_style(p)} for p in PEOPLE])
    assert report(folder, presidio)[0] == 0
    card = pd.read_csv(folder / "card" / "report_card.csv").set_index("method")
    assert card.loc["presidio", "percent_masked"] == pytest.approx(_aligned_share({}))


# ---------------------------------------------------------------- 4. every input validated before the slow part
def _bad_files():
    p, q = PEOPLE[0], PEOPLE[1]
    name = _name(p)
    return {  # case: (records, extra arguments, message after "file: line N: ")
        "duplicate id": (
            [{"id": p.person_id, "text": presidio_style(p)}] * 2,
            [],
            "line 2: id {!r} is repeated (first at line 1)".format(p.person_id),
        ),
        "overlapping spans": (
            [{"id": p.person_id, "text": "<mask>" + p.document[len(name) :], "spans": [[0, len(name)], [1, 3]]}],
            [],
            f"line 1: spans [0, {len(name)}] and [1, 3] overlap",
        ),
        "span out of range": (
            [{"id": p.person_id, "text": p.document, "spans": [[0, 10**6]]}],
            [],
            "line 1: 'spans' must be [start, end]",
        ),
        "unknown id": (
            [{"id": q.person_id, "text": q.document}, {"id": "stranger", "text": "x"}],
            [],
            "line 2: id 'stranger' is not among",
        ),
        "unknown placeholder": (
            [{"id": p.person_id, "text": p.document.replace(name, "[REDACTED]")}],
            [],
            "line 1: unknown placeholder '[REDACTED]'",
        ),
        "ambiguous placeholder": (
            [{"id": p.person_id, "text": p.document.replace(name, "er")}],
            ["--placeholder", "er"],
            "line 1: the placeholder 'er' also occurs in the original",
        ),
        "text and spans differ": (
            [{"id": p.person_id, "text": p.document, "spans": [[0, len(name)]]}],
            [],
            "line 1: 'text' does not match 'spans'",
        ),
    }


@pytest.mark.parametrize("case", list(_bad_files()))
def test_bad_redaction_file_is_one_line_before_any_model(folder, no_models, case):
    records, extra, message = _bad_files()[case]
    path = _jsonl(folder / "bad.jsonl", records)
    status, _, errors = run(["report", path, "--people", folder / "people.csv", *extra, "-o", folder / "card"])
    assert status == 1 and errors.startswith(f"deid-nb report: {path}: {message}"), errors
    assert len(errors.splitlines()) == 1 and not (folder / "card").exists()


# ---------------------------------------------------------------- 5. deid-nb redact writes baselines report can read
@pytest.mark.parametrize("method", ["presidio", "scrubadub", "named_entity", "lexical", "idf"])
def test_redact_writes_what_report_reads(folder, method):
    assert run(["redact", folder / "people.csv", "--method", method, "-o", folder / f"{method}.jsonl"])[0] == 0
    records = [json.loads(line) for line in (folder / f"{method}.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == [p.person_id for p in PEOPLE] and any(r["spans"] for r in records)
    assert all(set(r) == {"id", "text", "spans"} for r in records)
    assert report(folder, folder / f"{method}.jsonl")[0] == 0


# ---------------------------------------------------------------- 6. the output follows its extension, atomically
def test_output_follows_the_extension(folder):
    for suffix in (".csv", ".parquet", ".jsonl"):
        assert (
            run(
                [
                    "deidentify",
                    folder / "people.csv",
                    "--reidentifier",
                    "bm25",
                    "--k",
                    "2",
                    "-o",
                    folder / f"out{suffix}",
                ]
            )[0]
            == 0
        )
    csv = pd.read_csv(folder / "out.csv")
    assert [json.loads(s) for s in csv.spans] == [
        json.loads(l)["spans"] for l in (folder / "out.jsonl").read_text().splitlines()
    ]
    assert json.loads(csv.certificate[0])["k"] == 2 and len(pd.read_parquet(folder / "out.parquet")) == len(PEOPLE)
    assert not [p for p in os.listdir(folder) if p.startswith(".")]  # no temporary file left behind
    assert report(folder, folder / "out.csv", folder / "out.parquet")[0] == 0  # report reads what deidentify writes


def _bare_model(folder: Path, ids) -> Path:
    "A saved de-identifier's settings and candidate pool, without its model (never loaded by the tests using it)."
    model = folder / "bare"
    model.mkdir()
    settings = {"k": 1, "placeholder": "<mask>", "search": "approximate", "long_documents": "windows"}
    (model / "deidentifier.json").write_text(json.dumps({"format": 1, "reidentifier": {"kind": "bm25"}, **settings}))
    _jsonl(model / "candidates.jsonl", [{"id": i, "profile": {"name": i}} for i in ids])
    return model


def test_verify_reads_every_certificate_before_any_model(folder, no_models):
    "A record whose certificate is not one is a one-line error naming it, before the saved model loads."
    model = _bare_model(folder, [p.person_id for p in PEOPLE])
    broken = _jsonl(folder / "broken.jsonl", [{"id": PEOPLE[0].person_id, "text": "x", "certificate": {"k": 1}}])
    status, _, err = run(["verify", broken, "--model", model])
    assert status == 1 and "broken.jsonl: line 1: not a certificate" in err and len(err.splitlines()) == 1, err


def test_report_reads_every_certificate_before_any_model(folder, no_models):
    "With --model, a record whose certificate is not one is a one-line error naming it, before any attack is built."
    model = _bare_model(folder, [p.person_id for p in PEOPLE])
    records = [{"id": p.person_id, "text": p.document} for p in PEOPLE]
    broken = _jsonl(folder / "broken.jsonl", [{**records[0], "certificate": {"k": 1}}, *records[1:]])
    status, _, err = report(folder, broken, extra=["--model", model])
    assert status == 1 and "broken.jsonl: line 1: not a certificate" in err and len(err.splitlines()) == 1, err


def test_report_checks_the_saved_pool_before_any_model(folder, no_models):
    "A saved model over other people than the table's is refused before any attack is built or loaded."
    model = _bare_model(folder, ["someone else"])
    plain = _jsonl(folder / "plain.jsonl", [{"id": p.person_id, "text": p.document} for p in PEOPLE])
    status, _, err = report(folder, plain, extra=["--model", model])
    assert status == 1 and f"its candidate pool is not the people of {folder / 'people.csv'}" in err, err


def test_a_failed_write_leaves_the_old_output(folder):
    "Outputs go to a temporary file that is renamed: a write that fails half-way leaves the old file as it was."
    target = folder / "kept.jsonl"
    target.write_text("old\n")
    with pytest.raises(TypeError):  # the second record cannot be written as JSON
        write_records([{"id": "a", "text": "x"}, {"id": "b", "text": object()}], target)
    assert target.read_text() == "old\n" and not [p for p in os.listdir(folder) if p.startswith(".")]


def test_unknown_extension_and_missing_pyarrow_are_one_line(folder, no_models, monkeypatch):
    status, _, errors = run(["redact", folder / "people.csv", "--method", "lexical", "-o", folder / "x.txt"])
    assert (
        status == 1
        and errors
        == f"deid-nb redact: {folder / 'x.txt'}: unknown output format '.txt'; use one of .jsonl, .csv, .parquet\n"
    )
    find_spec = commands.importlib.util.find_spec
    monkeypatch.setattr(
        commands.importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else find_spec(name, *a)
    )
    status, _, errors = run(["deidentify", folder / "people.csv", "--reidentifier", "bm25", "-o", folder / "x.parquet"])
    assert status == 1 and "writing .parquet needs pyarrow" in errors and len(errors.splitlines()) == 1


# ---------------------------------------------------------------- 7. exit status 3 when a certificate is not met
def test_unmet_certificate_exits_3_unless_allowed(folder, monkeypatch):
    transform = Deidentifier.transform

    def one_short(self, *args, **kwargs):
        redactions = transform(self, *args, **kwargs)
        redactions[0].certificate = dataclasses.replace(redactions[0].certificate, goal_met=False)
        return redactions

    monkeypatch.setattr(Deidentifier, "transform", one_short)
    arguments = ["deidentify", folder / "people.csv", "--reidentifier", "bm25", "-o", folder / "out.jsonl"]
    assert run(arguments)[0] == cli.UNCERTIFIED == 3 and (folder / "out.jsonl").exists()
    assert run(arguments + ["--allow-uncertified"])[0] == 0
    assert "3  deidentify wrote its output, but some certificate is not met" in cli.parser().format_help()


# ---------------------------------------------------------------- 8. a saved model's settings win unless given
def test_saved_settings_win(folder):
    first = [
        "deidentify",
        folder / "people.csv",
        "--reidentifier",
        "bm25",
        "--k",
        "3",
        "--mask",
        "[X]",
        "--search",
        "greedy",
    ]
    assert run(first + ["--save-model", folder / "model", "-o", folder / "first.jsonl"])[0] == 0
    status, out, _ = run(
        ["deidentify", folder / "people.csv", "--model", folder / "model", "-o", folder / "again.jsonl"]
    )
    again = [json.loads(line) for line in (folder / "again.jsonl").read_text().splitlines()]
    assert status == 0 and {r["certificate"]["k"] for r in again} == {3} and all("[X]" in r["text"] for r in again)
    assert f"k=3 (saved in {folder / 'model'}), placeholder='[X]' (saved" in out and "search='greedy' (saved" in out
    status, out, _ = run(
        ["deidentify", folder / "people.csv", "--model", folder / "model", "--k", "1", "-o", folder / "k1.jsonl"]
    )
    assert status == 0 and "k=1 (given)" in out
    assert {json.loads(line)["certificate"]["k"] for line in (folder / "k1.jsonl").read_text().splitlines()} == {1}


# ---------------------------------------------------------------- 9. every argument and path checked first, one line, --debug
BAD_CALLS = {  # case: (arguments, message); {f} is the test's folder
    "k zero": (
        "deidentify {f}/people.csv --reidentifier nn_uniform --k 0 -o {f}/out.jsonl",
        "k must be a whole number >= 1",
    ),
    "output folder is a file": (
        "deidentify {f}/people.csv --reidentifier bm25 -o {f}/people.csv/out.jsonl",
        "is not a folder",
    ),
    "output is the input": ("redact {f}/people.csv --method lexical -o {f}/people.csv", "would overwrite the input"),
    "missing table": ("redact {f}/nobody.csv --method presidio -o {f}/out.jsonl", "table {f}/nobody.csv: no such file"),
    "missing redaction": (
        "report {f}/nothing.jsonl --people {f}/people.csv -o {f}/card",
        "redaction {f}/nothing.jsonl: no such file",
    ),
    "report into a file": ("report {f}/people.csv --people {f}/people.csv -o {f}/people.csv", "is a file"),
    "save-model under a file": (
        "deidentify {f}/people.csv --save-model {f}/people.csv/m -o {f}/out.jsonl",
        "is not a folder",
    ),
    "fraction above 1": (
        "redact {f}/people.csv --method idf --fraction 2 -o {f}/out.jsonl",
        "--fraction must be in [0, 1]",
    ),
}


@pytest.mark.parametrize("arguments,message", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_call_is_one_line_before_any_model(folder, no_models, arguments, message):
    command = arguments.split()[0]
    status, _, errors = run(arguments.format(f=folder).split())
    assert status == 1 and errors.startswith(f"deid-nb {command}: ") and message.format(f=folder) in errors, errors
    assert len(errors.splitlines()) == 1 and not (folder / "out.jsonl").exists() and not (folder / "card").exists()


def test_reproduce_checks_its_figures_folder_first(folder, no_models, monkeypatch):
    monkeypatch.setenv("DEID_NB_FIGURES", str(folder / "people.csv" / "figures"))
    status, _, errors = run(["reproduce", "--only", "62_report_card_wikibio"])
    assert (
        status == 1
        and errors.startswith("deid-nb reproduce: the figures folder cannot be written")
        and len(errors.splitlines()) == 1
    )


def test_debug_shows_the_traceback(folder):
    with pytest.raises(Exception, match="no such file"):
        main(["--debug", "redact", str(folder / "nobody.csv"), "--method", "lexical", "-o", str(folder / "x.jsonl")])


@pytest.mark.parametrize("module", ["deid_nb", "deid_nb.cli"])
def test_python_m_runs_the_program(folder, module):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shown = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0 and "redact" in shown.stdout and "exit status" in shown.stdout
    if module == "deid_nb":
        failed = subprocess.run(
            [
                sys.executable,
                "-m",
                module,
                "redact",
                str(folder / "nobody.csv"),
                "--method",
                "lexical",
                "-o",
                "x.jsonl",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
        )
        assert failed.returncode == 1 and re.fullmatch(
            r"deid-nb redact: table \S+nobody.csv: no such file\n", failed.stderr
        ), failed.stderr


# ---------------------------------------------------------------- issue 33: help at once, no model code loaded to parse
@pytest.mark.parametrize("arguments", [["--help"], ["report", "--help"], ["reproduce", "--help"]])
def test_help_imports_no_model_code(arguments):
    "What `python -X importtime` lists for `deid-nb … --help`: not torch, transformers, spaCy or pandas (they cost seconds)."
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shown = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "deid_nb", *arguments], capture_output=True, text=True, env=env
    )
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in shown.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert shown.returncode == 0 and "usage: deid-nb" in shown.stdout and "deid_nb" in imported
    assert not imported & {"torch", "transformers", "spacy", "pandas"}, sorted(
        imported & {"torch", "transformers", "spacy", "pandas"}
    )


def test_a_command_imports_its_module_when_it_runs(folder):
    "The sub-command's `module:function` is imported at dispatch: a bad table is still one line, exit status 1."
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = (
        "import sys; from deid_nb.cli import main; status = main(sys.argv[1:]); "
        "print(status, 'deid_nb.commands' in sys.modules, 'torch' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code, "verify", str(folder / "nobody.jsonl"), "--model", str(folder)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert shown.stdout.split() == ["1", "True", "True"] and "deid-nb verify: redaction" in shown.stderr, shown.stderr


def test_reproduce_overrides_are_checked_before_anything_runs(no_models):
    "A size that a chosen notebook does not declare: one line, exit status 1, nothing run (`reproduce` is booby-trapped)."
    status, _, errors = run(
        ["reproduce", "--only", "45_retrieval_tables", "--overrides", '{"n_serch": 200}', "--seed", "1"]
    )
    assert status == 1 and errors.startswith(
        "deid-nb reproduce: --overrides: 45_retrieval_tables has no 'n_serch' (its sizes: documents"
    )
    assert len(errors.splitlines()) == 1


def test_report_says_what_it_is_doing(folder, monkeypatch, caplog):
    "A line on stderr per slow step, and a bar over the infilling attack's spans (the dense re-ranker left out: no model to load)."
    monkeypatch.setattr(commands, "DenseReranker", lambda name: None)
    plain = _jsonl(folder / "plain.jsonl", [{"id": p.person_id, "text": presidio_style(p)} for p in PEOPLE])
    with caplog.at_level(logging.INFO, logger="deid_nb"):
        status, _, errors = run(
            ["report", plain, "--people", folder / "people.csv", "--reidentifiers", "bm25", "-o", folder / "card"]
        )
    said = "\n".join(record.getMessage() for record in caplog.records)
    steps = [
        "8 people and 1 redaction file(s) read and checked",
        "building the bm25 attack",
        "building the infilling attack's background",
        "report card: plain, 8 documents: re-identification",
        "report card: plain: the infilling attack at L3P",
        "report card: plain: re-identification after infilling",
    ]
    assert status == 0 and [step for step in steps if step not in said] == []
    assert "infilling at L3P" in errors and "span" in errors  # tqdm's bar, on stderr

"""Bad input for the foundations (deid_nb.core, deid_nb.data): every case asserts the exact outcome.

Either an error of a named type whose message names the file and the line/record, or the record skipped,
logged and reported in `.skipped` with its place, id and reason. Property tests (hypothesis) check that
the table loaders round-trip any id string. A cache file the package wrote that is cut short is recomputed
with a warning naming it; a saved model the user keeps is a one-line error naming it.
"""

import csv
import hashlib
import json
import logging
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file

import deid_nb.adversarial.training as adversarial_training
import deid_nb.core as core
from deid_nb.adversarial.pii_data import TaggedSentence, silver_cache_path, silver_sentences
from deid_nb.adversarial.representation import AdversarialConfig
from deid_nb.adversarial.tagger import TaggerConfig, train_tagger
from deid_nb.adversarial.training import train_adversarial
from deid_nb.adversarial.word_embeddings import random_embeddings
from deid_nb.causal_lm import tiny_causal_lm
from deid_nb.core import ChecksumError, check_sha256, download_file, get_logger, safe_name, sha256_of
from deid_nb.data import (
    DATA_SOURCES,
    DataError,
    DataSource,
    PeopleDataset,
    SkippedRecord,
    check_dataset_file,
    dataset_path,
    load_dataset,
    load_wikibio_2000,
    load_wikibio_mini,
    make_synthetic_people,
    people_from_table,
    records_sha256,
)
from deid_nb.nn_deid.runs import _read_results
from deid_nb.nn_deid.model import BiEncoder, tiny_config
from deid_nb.nn_deid.training import TrainingConfig
from deid_nb.nn_deid.training_run import train_bi_encoder
from deid_nb.sanitize.context_indicators import cached_perturbation_drops
from deid_nb.sanitize.lm_scores import document_scores
from deid_nb.sanitize.recogniser import RecogniserConfig, load_recogniser, recogniser_cache_key
from deid_nb.sanitize.risk_indicators import gold_span_table
from deid_nb.sanitize.span_indicators import span_embeddings
from deid_nb.sanitize.tab_corpus import load_tab

SHARED = Path("/work/shared/data")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- broken files: DataError naming file + line
BROKEN_FILES = {
    "unquoted comma shifts a row": (
        "people.csv",
        "id,document,name\n1,ann is a poet,ann\n2,bob, a sailor,bob\n",
        "people.csv: line 3 has 4 fields but the header has 3",
    ),
    "extra trailing field": (
        "people.csv",
        "id,document,name\n1,ann,ann,\n",
        "people.csv: line 2 has 4 fields but the header has 3",
    ),
    "missing field": (
        "people.csv",
        "id,document,name\n1,ann,ann\n2,bob\n",
        "people.csv: line 3 has 2 fields but the header has 3",
    ),
    "wrong count after a multi-line record": (
        "people.csv",
        'id,document,name\n1,"two\nlines",ann\n2,bob,bob,x\n',
        "people.csv: line 4 has 4 fields",
    ),
    "every row one field longer (pandas would make an index)": (
        "people.csv",
        "id,document\n1,ann,ann\n2,bob,bob\n",
        "people.csv: line 2 has 3 fields but the header has 2",
    ),
    "unterminated quote": ("people.csv", 'id,document,name\n1,"ann,ann\n', "people.csv: line 2 is not valid CSV"),
    "text after a closing quote": (
        "people.csv",
        'id,document,name\n1,"ann"x,ann\n',
        "people.csv: line 2 is not valid CSV",
    ),
    "empty CSV": ("people.csv", "", "people.csv: the file is empty"),
    "header-only CSV": ("people.csv", "id,document,name\n", "people.csv: only a header line, no records"),
    "repeated header column": (
        "people.csv",
        "id,document,name,name\n1,ann,ann,x\n",
        "the header repeats column(s) ['name']",
    ),
    "missing column": ("people.csv", "id,text,name\n1,ann,ann\n", "missing column(s) ['document']"),
    "invalid JSON line": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "name": "ann"}\n{"id": "2", \n',
        "people.jsonl: line 2 is not valid JSON",
    ),
    "JSON line not an object": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "name": "ann"}\n[1, 2]\n',
        "people.jsonl: line 2 is a JSON list, not an object",
    ),
    "empty JSONL": ("people.jsonl", "", "people.jsonl: the file is empty"),
    "blank-lines-only JSONL": ("people.jsonl", "\n  \n\n", "people.jsonl: the file is empty"),
    "JSON not a list of objects": (
        "people.json",
        '{"id": "1"}',
        "people.json: expected a non-empty JSON list of objects",
    ),
    "JSON syntax error": ("people.json", '[{"id": "1",]', "people.json: not valid JSON"),
    "unknown format": ("people.tsv", "id\tdocument\n1\tann\n", "people.tsv: cannot read '.tsv' files"),
}


@pytest.mark.parametrize("name,text,message", BROKEN_FILES.values(), ids=BROKEN_FILES.keys())
@pytest.mark.parametrize("on_error", ["skip", "raise"])
def test_broken_file_raises_naming_file_and_line(tmp_path, name, text, message, on_error):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError) as error:
        people_from_table(path, on_error=on_error)
    assert message in str(error.value)
    assert str(tmp_path) in str(error.value) or "missing column" in message


def test_not_utf8_and_missing_file(tmp_path):
    path = tmp_path / "people.csv"
    path.write_bytes("id,document,name\n1,caf\u00e9,ann\n".encode("latin-1"))
    with pytest.raises(DataError, match="people.csv: not UTF-8 text"):
        people_from_table(path)
    with pytest.raises(DataError, match="nothere.csv: file not found"):
        people_from_table(tmp_path / "nothere.csv")
    with pytest.raises(DataError, match="table: no rows"):
        people_from_table(pd.DataFrame(columns=["id", "document", "name"]))


# ---------------------------------------------------------------- bad records: skipped + reported, or raised
BAD_RECORDS = {
    "repeated id (CSV)": (
        "people.csv",
        "id,document,name\n1,ann,ann\n2,bob,bob\n1,cy,cy\n",
        {},
        "line 4",
        "1",
        "the id repeats the one at line 2",
    ),
    "empty document (CSV)": (
        "people.csv",
        "id,document,name\n1,ann,ann\n2,,bob\n",
        {},
        "line 3",
        "2",
        "the document is empty or not text",
    ),
    "whitespace id (CSV)": (
        "people.csv",
        "id,document,name\n1,ann,ann\n  ,bob,bob\n",
        {},
        "line 3",
        "",
        "the id is empty",
    ),
    "ids that differ only by surrounding spaces (CSV)": (
        "people.csv",
        "id,document,name\n 1,ann,ann\n1 ,bob,bob\n",
        {},
        "line 3",
        "1",
        "the id repeats the one at line 2",
    ),
    "ids that differ only by surrounding spaces (JSONL)": (
        "people.jsonl",
        '{"id": "1\\t", "document": "ann", "name": "ann"}\n{"id": " 1", "document": "bob", "name": "bob"}\n',
        {},
        "line 2",
        "1",
        "the id repeats the one at line 1",
    ),
    "empty profile (CSV)": (
        "people.csv",
        "id,document,name\n1,ann,ann\n2,bob,\n",
        {},
        "line 3",
        "2",
        "the profile is empty",
    ),
    "profile cell not JSON (CSV)": (
        "people.csv",
        'id,document,profile\n1,ann,"{""name"": ""ann""}"\n2,bob,{name: bob}\n',
        {"profile_column": "profile"},
        "line 3",
        "2",
        "the 'profile' cell is not valid JSON",
    ),
    "profile cell a JSON list (CSV)": (
        "people.csv",
        'id,document,profile\n1,ann,"{""name"": ""ann""}"\n2,bob,"[1, 2]"\n',
        {"profile_column": "profile"},
        "line 3",
        "2",
        "the 'profile' cell is a JSON list, not an object",
    ),
    "null id (JSONL)": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "name": "ann"}\n{"id": null, "document": "bob", "name": "bob"}\n',
        {},
        "line 2",
        "",
        "the id is empty",
    ),
    "missing id (JSONL)": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "name": "ann"}\n{"document": "bob", "name": "bob"}\n',
        {},
        "line 2",
        "",
        "the id is empty",
    ),
    "boolean id (JSONL)": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "name": "ann"}\n{"id": true, "document": "bob", "name": "bob"}\n',
        {},
        "line 2",
        True,
        "the id is a bool, not a string",
    ),
    "object id (JSONL)": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "name": "ann"}\n{"id": {"a": 1}, "document": "bob", "name": "bob"}\n',
        {},
        "line 2",
        {"a": "1"},
        "the id is a dict, not a string",
    ),
    "repeated numeric id (JSONL)": (
        "people.jsonl",
        '{"id": 17, "document": "ann", "name": "ann"}\n{"id": 17, "document": "bob", "name": "bob"}\n',
        {},
        "line 2",
        "17",
        "the id repeats the one at line 1",
    ),
    "profile dict not an object (JSONL)": (
        "people.jsonl",
        '{"id": "1", "document": "ann", "profile": {"name": "ann"}}\n'
        '{"id": "2", "document": "bob", "profile": "bob"}\n',
        {"profile_column": "profile"},
        "line 2",
        "2",
        "the 'profile' cell is not valid JSON",
    ),
    "second record of a JSON list": (
        "people.json",
        '[{"id": "1", "document": "ann", "name": "ann"}, {"id": "2", "document": " ", "name": "bob"}]',
        {},
        "record 1",
        "2",
        "the document is empty or not text",
    ),
}


@pytest.mark.parametrize("name,text,kwargs,location,person_id,reason", BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_bad_record_is_skipped_logged_and_reported(tmp_path, caplog, name, text, kwargs, location, person_id, reason):
    path = write(tmp_path, name, text)
    with caplog.at_level(logging.WARNING, logger="deid_nb"):
        people = people_from_table(path, **kwargs)
    assert [p.person_id for p in people] == (["1", "2"] if location == "line 4" else ["17"] if "17" in text else ["1"])
    assert len(people.skipped) == 1
    skipped = people.skipped[0]
    assert (skipped.where, skipped.person_id) == (f"{path}: {location}", person_id)
    assert skipped.reason.startswith(reason)
    assert f"{path}: {location}" in caplog.text and "skipped" in caplog.text  # logged through the package logger


@pytest.mark.parametrize("name,text,kwargs,location,person_id,reason", BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_bad_record_raises_when_asked(tmp_path, name, text, kwargs, location, person_id, reason):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError) as error:
        people_from_table(path, on_error="raise", **kwargs)
    assert str(error.value).startswith(f"{path}: {location} (id {person_id!r}): {reason}")


def test_csv_field_over_the_csv_modules_limit_loads_as_from_jsonl(tmp_path):
    document = "a long biography " * 10_000  # 170,000 characters: over Python csv's default field_size_limit (131,072)
    csv_path = write(tmp_path, "people.csv", f'id,document,name\np1,"{document}",ann\n')
    jsonl_path = write(tmp_path, "people.jsonl", json.dumps({"id": "p1", "document": document, "name": "ann"}) + "\n")
    limit = csv.field_size_limit()
    assert people_from_table(csv_path, on_error="raise") == people_from_table(jsonl_path, on_error="raise")
    assert people_from_table(csv_path)[0].document == document.strip()
    assert csv.field_size_limit() == limit  # the csv module's setting is put back


def test_dataframe_rows_are_named_by_index_and_float_ids_refused():
    table = pd.DataFrame({"id": [17.0, 18.0], "document": ["ann", "bob"], "name": ["ann", "bob"]}, index=[10, 11])
    with pytest.raises(DataError, match=r"table: none of the 2 records is usable \(first: the id is a float"):
        people_from_table(table)
    table = pd.DataFrame({"id": ["a", 18.0], "document": ["ann", "bob"], "name": ["ann", "bob"]}, index=[10, 11])
    people = people_from_table(table, source="mine")
    assert people.skipped == [
        SkippedRecord("mine: row 11", 18.0, "the id is a float, not a string (read ids as text: dtype=str)")
    ]


def test_all_records_bad_is_an_error(tmp_path):
    path = write(tmp_path, "people.csv", "id,document,name\n1,,ann\n2,,bob\n")
    with pytest.raises(DataError, match=r"people.csv: none of the 2 records is usable \(first: the document is empty"):
        people_from_table(path)


def test_on_error_choice_is_checked(tmp_path):
    path = write(tmp_path, "people.csv", "id,document,name\n1,ann,ann\n")
    with pytest.raises(ValueError, match="on_error must be one of"):
        people_from_table(path, on_error="ignore")


def test_wikibio_loaders_report_bad_records(tmp_path):
    lines = write(
        tmp_path,
        "w.jsonl",
        '{"id": 17, "text": "ann", "box": {"name": ["ann"]}}\n{"id": 18, "text": "bob", "box": ["x"]}\n'
        '{"id": "canary-1", "text": "made up"}\n',
    )
    people = load_wikibio_2000(path=lines)
    assert [p.person_id for p in people] == ["17"]
    assert people.skipped[0].where == f"{lines}: line 2" and people.skipped[0].reason.startswith(
        "not a WikiBio-2000 record (AttributeError"
    )
    big = write(
        tmp_path,
        "big.jsonl",
        '{"id": 1234567890123456, "text": "ann", "box": {"name": ["ann"]}}\n'
        '{"id": 1234567890123457, "text": "bob", "box": {"name": ["bob"]}}\n',
    )
    assert [p.person_id for p in load_wikibio_2000(path=big)] == ["1234567890123456", "1234567890123457"]
    mini = write(
        tmp_path,
        "mini.csv",
        "title,first_name,occupation,nationality,birth_year,age,article,url\n"
        "ann,ann,poet,x,1900,70,ann was a poet,u1\nbob,bob,sailor,y,1901,71,bob, a sailor,u2\n",
    )
    with pytest.raises(DataError, match="mini.csv: line 3 has 9 fields but the header has 8"):
        load_wikibio_mini(path=mini)


def test_numeric_jsonl_ids_stay_as_written(tmp_path):
    path = write(
        tmp_path,
        "p.jsonl",
        "".join(
            json.dumps({"document": f"doc {i}", "name": f"n{i}"})[:-1] + f', "id": {raw}}}\n'
            for i, raw in enumerate(["17", "17.0", "1234567890123456", "1234567890123457", "1e16", "-0", "1.50"])
        ),
    )
    people = people_from_table(path)
    assert [p.person_id for p in people] == ["17", "17.0", "1234567890123456", "1234567890123457", "1e16", "-0", "1.50"]
    assert people.skipped == []


# ---------------------------------------------------------------- property tests: ids round-trip (less their surrounding spaces)
ids = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(lambda s: s.strip())
id_lists = st.lists(ids, min_size=1, max_size=8, unique_by=str.strip)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(person_ids=id_lists)
def test_csv_round_trips_any_id(tmp_path, person_ids):
    path = tmp_path / "people.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "document", "name"])
        writer.writerows(
            [person_id, f"document {i}, with a comma", f"name {i}"] for i, person_id in enumerate(person_ids)
        )
    people = people_from_table(path, on_error="raise")
    assert [p.person_id for p in people] == [person_id.strip() for person_id in person_ids]
    assert [p.document for p in people] == [f"document {i}, with a comma" for i in range(len(person_ids))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(person_ids=id_lists, ensure_ascii=st.booleans())
def test_jsonl_round_trips_any_id(tmp_path, person_ids, ensure_ascii):
    path = tmp_path / "people.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": person_id, "document": f"document {i}", "name": "x"}, ensure_ascii=ensure_ascii) + "\n"
            for i, person_id in enumerate(person_ids)
        ),
        encoding="utf-8",
    )
    assert [p.person_id for p in people_from_table(path, on_error="raise")] == [
        person_id.strip() for person_id in person_ids
    ]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numbers=st.lists(st.integers(min_value=-(10**20), max_value=10**20), min_size=1, max_size=8, unique=True))
def test_jsonl_numeric_ids_never_collide(tmp_path, numbers):
    path = tmp_path / "people.jsonl"
    path.write_text("".join(f'{{"id": {n}, "document": "document {i}", "name": "x"}}\n' for i, n in enumerate(numbers)))
    assert [p.person_id for p in people_from_table(path, on_error="raise")] == [str(n) for n in numbers]


# ---------------------------------------------------------------- the data directory
def test_misspelled_env_data_dir_says_where_what_and_how(tmp_path, monkeypatch):
    typo = tmp_path / "shraed" / "data"
    monkeypatch.setenv("DEID_NB_DATA", str(typo))
    with pytest.raises(DataError) as error:
        load_dataset("wikibio_mini")
    message = str(error.value)
    assert f"the data directory {typo} (from $DEID_NB_DATA) does not exist" in message
    assert all(source.relative_path in message for source in DATA_SOURCES.values())
    assert "pass data_dir= or set $DEID_NB_DATA" in message
    assert not (tmp_path / "shraed").exists()


def test_failed_download_is_a_data_error_and_leaves_no_folder(tmp_path, monkeypatch):
    unreachable = (tmp_path / "nowhere" / "wikibio-mini.csv").as_uri()
    monkeypatch.setitem(
        DATA_SOURCES, "wikibio_mini", DataSource("wikibio_mini/wikibio-mini.csv", unreachable, "", "", sha256="0" * 64)
    )
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(DataError) as error:
        dataset_path("wikibio_mini", data)
    message = str(error.value)
    assert f"downloading {unreachable} failed (URLError" in message and f"looked in {data}" in message
    assert list(data.iterdir()) == []  # no empty wikibio_mini/ left behind


def test_download_checks_the_pin_before_the_cache(tmp_path, monkeypatch):
    public = write(
        tmp_path,
        "public.csv",
        "title,first_name,occupation,nationality,birth_year,age,article,url\nann,ann,poet,x,1900,70,ann wrote,u1\n",
    )
    pinned = DataSource("wikibio_mini/wikibio-mini.csv", public.as_uri(), "", "", sha256=sha256_of(public))
    monkeypatch.setitem(DATA_SOURCES, "wikibio_mini", pinned)
    data = tmp_path / "data"
    data.mkdir()
    assert [p.person_id for p in load_wikibio_mini(data)] == ["u1"]  # downloaded, checked, loaded
    cached = data / "wikibio_mini" / "wikibio-mini.csv"
    cached.write_text(cached.read_text() + "bob,bob,sailor,y,1901,71,bob sailed,u2\n")
    with pytest.raises(ChecksumError, match=f"wikibio_mini: {cached} has SHA-256 .* none of the pinned copies"):
        load_wikibio_mini(data)  # a cached file is checked on every use
    monkeypatch.setitem(
        DATA_SOURCES, "wikibio_mini", DataSource(pinned.relative_path, pinned.url, "", "", sha256="0" * 64)
    )
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(ChecksumError, match="downloaded from file://"):
        dataset_path("wikibio_mini", fresh)
    assert list(fresh.iterdir()) == []


@pytest.mark.parametrize("name", [n for n, s in DATA_SOURCES.items() if s.url])
def test_every_public_source_is_commit_pinned_and_the_shared_copy_passes(name):
    source = DATA_SOURCES[name]
    assert "/main/" not in source.url and len(source.url.split("/")[5]) == 40, source.url
    assert source.sha256 or source.records_sha256
    if (SHARED / source.relative_path).exists():
        assert check_dataset_file(name, SHARED / source.relative_path)


def test_truncated_or_tampered_copy_is_named(tmp_path):
    for name in ("wikibio_mini", "wikibio_2000", "wiki_annotated"):
        copy = tmp_path / DATA_SOURCES[name].relative_path
        copy.parent.mkdir(parents=True, exist_ok=True)
        data = (SHARED / DATA_SOURCES[name].relative_path).read_bytes()
        copy.write_bytes(data[: len(data) // 2])
        with pytest.raises(ChecksumError) as error:
            dataset_path(name, tmp_path)
        assert str(copy) in str(error.value)


def test_wikibio_2000_public_layout_accepted_by_its_records(tmp_path):
    ours = SHARED / DATA_SOURCES["wikibio_2000"].relative_path
    public = tmp_path / "wikibio_full_sample" / "wikibio-2000.jsonl"
    public.parent.mkdir()
    with open(ours, encoding="utf-8") as lines, open(public, "w", encoding="utf-8") as out:
        for i, line in enumerate(lines):
            out.write(json.dumps({"entities": None, **json.loads(line), "method": "M2"}) + "\n")
            if i % 500 == 0:
                out.write(
                    json.dumps(
                        {
                            "id": f"canary-{i}-r8",
                            "title": "made up",
                            "url": None,
                            "box": {"name": ["made up"]},
                            "text": "a made-up person",
                            "text_anon": "",
                            "meta": {},
                        }
                    )
                    + "\n"
                )
    assert sha256_of(public) != sha256_of(ours)
    assert check_dataset_file("wikibio_2000", public) == "the public file's records"
    assert (
        records_sha256(public, DATA_SOURCES["wikibio_2000"].record_fields)
        == DATA_SOURCES["wikibio_2000"].records_sha256
    )
    assert len(load_dataset("wikibio_2000", tmp_path)) == 2000  # canaries dropped


# ---------------------------------------------------------------- names flowing into paths
TRAVERSALS = [
    "../artifacts",
    "../../etc/passwd",
    "..",
    ".",
    "/tmp/x",
    "a/b",
    "a\\b",
    "",
    " ",
    ".hidden",
    "x\n",
    "x\x00y",
    "~",
    "~root",
    "C:",
    "nn idf",
    "é",
    "x" * 129,
]


@pytest.mark.parametrize("name", TRAVERSALS)
def test_safe_name_refuses_names_that_escape(name):
    with pytest.raises(ValueError, match="cannot be used in a file name"):
        safe_name(name, "dataset name")


@pytest.mark.parametrize(
    "name", ["wikibio_2000", "wikibio_2000+synthetic", "nn_unfrozen_bm25", "x.bm25", "k=3", "A-b_1"]
)
def test_safe_name_keeps_the_project_names(name, tmp_path):
    assert safe_name(name) == name
    assert (tmp_path / safe_name(name)).resolve().parent == tmp_path.resolve()


@pytest.mark.parametrize("name", ["../../outside", "/abs", "a/b"])
def test_dataset_names_cannot_escape(name):
    with pytest.raises(ValueError, match="dataset name .* cannot be used in a file name"):
        PeopleDataset.from_people(name, make_synthetic_people(5))
    with pytest.raises(ValueError, match="cannot be used in a file name"):
        PeopleDataset(name, make_synthetic_people(5), {"train": [0]})
    with pytest.raises(DataError, match="unknown dataset"):
        load_dataset(name)


# ---------------------------------------------------------------- core: logging, removals, checksums
def test_package_logger_is_a_library_logger():
    package = get_logger()
    assert [type(h) for h in package.handlers if h.get_name() != "deid_nb.console"] == [logging.NullHandler]
    assert package.propagate and get_logger("deid_nb.data").propagate


def test_uncalled_helpers_are_gone():
    for name in ("get_device", "Paths"):
        assert not hasattr(core, name)


def test_check_sha256_names_the_file(tmp_path):
    path = write(tmp_path, "model.safetensors", "truncated")
    with pytest.raises(ChecksumError, match="model.safetensors: SHA-256 .* is not the pinned"):
        check_sha256(path, "0" * 64)
    assert download_file(path.as_uri(), tmp_path / "copy" / "m.bin", sha256=sha256_of(path)).read_text() == "truncated"


# ---------------------------------------------------------------- caches: an unreadable one is recomputed with a warning
def _truncate(path: Path) -> Path:
    "Cut a cache file to its first half (an interrupted copy); the path, for the warning to name."
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _only(folder: Path, pattern: str) -> Path:
    [found] = sorted(folder.rglob(pattern))
    return found


def _warned(caplog, path: Path) -> bool:
    return any(str(path) in r.getMessage() and "unreadable cache file" in r.getMessage() for r in caplog.records)


def test_truncated_lm_scores_are_rescored(tmp_path, caplog):
    model, tokenizer = tiny_causal_lm()
    texts = {"a": "Ann Lee is a judge in Oslo."}
    first = document_scores(model, tokenizer, texts, artifacts_dir=tmp_path)
    cache = _truncate(_only(tmp_path / "lm_scores", "*.npz"))
    again = document_scores(model, tokenizer, texts, artifacts_dir=tmp_path)
    assert again["a"].logprobs.tolist() == pytest.approx(first["a"].logprobs.tolist(), abs=1e-6)
    assert _warned(caplog, cache)


def test_truncated_span_embeddings_are_recomputed(tmp_path, caplog):
    first = span_embeddings(["Oslo", "a judge"], artifacts_dir=tmp_path)
    cache = _truncate(_only(tmp_path / "span_embeddings", "*.npy"))
    assert span_embeddings(["Oslo", "a judge"], artifacts_dir=tmp_path) == pytest.approx(first, abs=1e-5)
    assert _warned(caplog, cache)


def test_truncated_perturbation_drops_are_recomputed(tmp_path, caplog):
    mention = lambda start, end, text, kind, entity: {
        "start_offset": start,
        "end_offset": end,
        "span_text": text,
        "entity_type": kind,
        "identifier_type": "QUASI",
        "entity_id": entity,
    }
    [document] = load_tab(
        [
            {
                "doc_id": "d1",
                "text": "Ann Lee lives in Oslo.",
                "task": "main person: ann lee",
                "annotations": {
                    "a1": {
                        "entity_mentions": [
                            mention(0, 7, "Ann Lee", "PERSON", "e1"),
                            mention(17, 21, "Oslo", "LOC", "e2"),
                        ]
                    }
                },
            }
        ]
    )
    model, tokenizer = tiny_causal_lm()
    first = cached_perturbation_drops(model, tokenizer, document, gold_span_table([document]), artifacts_dir=tmp_path)
    cache = _truncate(_only(tmp_path / "perturbation", "*.json"))
    assert cached_perturbation_drops(
        model, tokenizer, document, gold_span_table([document]), artifacts_dir=tmp_path
    ) == pytest.approx(first)
    assert _warned(caplog, cache)


def test_truncated_silver_sentences_are_retagged(tmp_path, caplog):
    people = make_synthetic_people(2, seed=0)
    first = silver_sentences(people, artifacts_dir=tmp_path)
    cache = _truncate(silver_cache_path(people, artifacts_dir=tmp_path))
    assert silver_sentences(people, artifacts_dir=tmp_path) == first
    assert _warned(caplog, cache)


def test_unreadable_nn_deid_results_warn_and_are_searched_again(tmp_path, caplog):
    cache = write(tmp_path, "nn_deid_results.json", '{"p1": {"trajectories": [')
    assert _read_results(cache, reuse=True) == {}
    assert _warned(caplog, cache)
    assert _read_results(tmp_path / "absent.json", reuse=True) == {} and _read_results(cache, reuse=False) == {}


def _tagged():
    sentences = [
        TaggedSentence(
            "a",
            ["Alma", "Arden", "born", "1950"],
            [0, 5, 11, 16],
            [4, 10, 15, 20],
            ["B-PERSON", "I-PERSON", "O", "B-DATETIME"],
        ),
        TaggedSentence("b", ["born", "in", "Bergen"], [0, 5, 8], [4, 7, 14], ["O", "O", "B-LOC"]),
    ]
    return sentences, random_embeddings(["alma", "arden", "born", "in", "bergen"], dim=6)


def test_truncated_tagger_is_retrained(tmp_path, caplog):
    sentences, words = _tagged()
    config = TaggerConfig(hidden=4, layers=1, max_epochs=1, batch_size=2)
    first, _ = train_tagger(sentences, sentences, words, config, artifacts_dir=tmp_path)
    cache = _truncate(_only(tmp_path / "adversarial" / "tagger", "model.safetensors"))
    again, history = train_tagger(sentences, sentences, words, config, artifacts_dir=tmp_path)
    assert history["epochs"] == 1 and _warned(caplog, cache)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values()))


def test_truncated_adversarial_model_is_retrained(tmp_path, caplog, monkeypatch):
    sentences, words = _tagged()
    calls = []
    monkeypatch.setitem(
        adversarial_training.TRAINERS,
        "dann",
        lambda model, train, validation: calls.append(1) or {"history": {"dann": [1.0]}, "after_p1": None},
    )
    config = AdversarialConfig(
        dim=4, hidden=4, adversary_hidden=2, n_neighbours=2, tagger=TaggerConfig(hidden=4, layers=1)
    )
    train_adversarial(sentences, sentences, words, config, method="dann", artifacts_dir=tmp_path)
    cache = _truncate(_only(tmp_path / "adversarial" / "representation", "model.safetensors"))
    _, result = train_adversarial(sentences, sentences, words, config, method="dann", artifacts_dir=tmp_path)
    assert calls == [1, 1] and result["history"] == {"dann": [1.0]} and _warned(caplog, cache)


def test_truncated_training_checkpoint_trains_from_scratch(tmp_path, caplog):
    checkpoint = tmp_path / "run" / "epoch-0"
    checkpoint.mkdir(parents=True)
    save_file({"weights": torch.zeros(64)}, str(checkpoint / "model.safetensors"))
    save_file({"profile_embeddings": torch.zeros(3, 4)}, str(checkpoint / "state.safetensors"))
    cache = _truncate(checkpoint / "model.safetensors")
    write(
        tmp_path / "run",
        "training.json",
        json.dumps({"checkpoint": "epoch-0", "epochs_completed": 0, "history": [{"epoch": 0}]}),
    )
    dataset = PeopleDataset.from_people("synthetic30", make_synthetic_people(30, seed=0))
    torch.manual_seed(0)
    record = train_bi_encoder(
        BiEncoder(tiny_config()),
        dataset,
        TrainingConfig(epochs=1, batch_size=8, frozen_layers=1, num_threads=2),
        tmp_path / "run",
        progress=False,
    )
    assert [e["epoch"] for e in record["history"]] == [0] and "loss" in record["history"][0]
    assert _warned(caplog, cache)


def test_corrupt_saved_recogniser_is_a_one_line_error(tmp_path):
    people, config = make_synthetic_people(3, seed=0), RecogniserConfig(max_documents=3, epochs=1)
    digest = hashlib.sha256(json.dumps([(p.person_id, p.document, p.profile) for p in people]).encode()).hexdigest()
    folder = tmp_path / "recogniser" / recogniser_cache_key(config, digest)
    folder.mkdir(parents=True)
    saved = write(folder, "recogniser.json", '{"config": {"encoder": "min')
    with pytest.raises(ValueError) as error:
        load_recogniser(config, people, tmp_path)
    assert str(saved) in str(error.value) and "\n" not in str(error.value)


def test_truncated_saved_recogniser_weights_are_a_one_line_error(tmp_path):
    "A recogniser folder whose record reads but whose weights are truncated is a one-line error naming the folder (32)."
    people, config = make_synthetic_people(3, seed=0), RecogniserConfig(max_documents=3, epochs=1)
    digest = hashlib.sha256(json.dumps([(p.person_id, p.document, p.profile) for p in people]).encode()).hexdigest()
    folder = tmp_path / "recogniser" / recogniser_cache_key(config, digest)
    folder.mkdir(parents=True)
    write(folder, "recogniser.json", "{}")
    write(folder, "config.json", '{"model_type": "bert"}')
    write(folder, "model.safetensors", "truncated")
    with pytest.raises(ValueError) as error:
        load_recogniser(config, people, tmp_path)
    assert str(folder) in str(error.value) and "\n" not in str(error.value)

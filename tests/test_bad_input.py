"""The bad-input matrix: for each public entry point (baselines, metrics, `deidentify`, the CLI), every kind of bad
record or bad call, and the exact outcome -- an error of a named type whose message names the record and the problem,
or the record skipped and reported while the good records go through. (The loaders' matrix is in test_data_hardening.py.)"""

import contextlib
import io
import json
import logging
import math
import re
from pathlib import Path

import nbformat
import pandas as pd
import papermill
import pytest
import torch
from safetensors.torch import save_file

from deid_nb.adversarial.pii_data import TaggedSentence
from deid_nb.adversarial.tagger import BiLSTMCRF, TaggerConfig, predict_tags
from deid_nb.adversarial.word_embeddings import random_embeddings
from deid_nb.baselines import BASELINES, dataset_idf, redact_people
from deid_nb.data import PeopleDataset, Person, make_synthetic_people
from deid_nb.experiments import cached_json
from deid_nb.metrics import evaluate_masking, information_loss, percent_masked, reidentification_ranks
from deid_nb.infill.knowledge_base import KnowledgeBase
from deid_nb.infill.retrieval import SparseRetriever
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.runs import nn_deid_results
from deid_nb.nn_deid.registry import load_reidentifier
from deid_nb.nn_deid.model import (
    BiEncoder,
    cached_profile_embeddings,
    load_model,
    profile_cache_path,
    save_model,
    tiny_config,
)
from deid_nb.people import DataError
from deid_nb.reidentifier import WordOverlapReidentifier
from deid_nb.reproduce import reproduce
from deid_nb.run_plan import RunPlan, experiment_notebooks, is_done, task_fingerprint
from deid_nb.cli import main
from deid_nb.sanitize.tab_corpus import parse_tab_document
from deid_nb.sanitize.tab_metrics import TabScorer

PEOPLE = make_synthetic_people(6, seed=1)
IDF = dataset_idf(PEOPLE)
POOL = WordOverlapReidentifier(PEOPLE, seed=1)
PID = PEOPLE[0].person_id

# ---------------------------------------------------------------- baselines: bad records are logged and skipped
BAD_PEOPLE = {  # case: (record, the reason logged)
    "empty document": (Person("e", "", {}), "person e: the document is empty"),
    "blank document": (Person("w", "  \n ", {}), "person w: the document is empty"),
    "missing document": (Person("n", None, {}), "person n: the document is a NoneType, not a string"),
    "number document": (Person("i", 42, {}), "person i: the document is a int, not a string"),
    "profile a list": (Person("p", "Alma paints", ["name"]), "person p: profile is not a mapping"),
    "profile missing": (Person("q", "Alma paints", None), "person q: profile is not a mapping"),
    "not a Person": ({"person_id": "d", "document": "Alma paints"}, "record 0: a dict, not a Person"),
}
METHOD_PARAMS = {m: ({"fraction": 0.3} if m.startswith("idf") else {}) for m in BASELINES}


@pytest.mark.parametrize("record,reason", BAD_PEOPLE.values(), ids=BAD_PEOPLE.keys())
@pytest.mark.parametrize("method", sorted(BASELINES))
def test_baseline_skips_and_names_a_bad_record(method, record, reason, caplog):
    people = (
        [record] if method in ("presidio", "scrubadub", "named_entity") else [record, PEOPLE[0]]
    )  # no tool loaded for one bad record
    with caplog.at_level(logging.WARNING, logger="deid_nb"):
        masked = redact_people(people, method, idf=IDF, progress=False, **METHOD_PARAMS[method])
    assert list(masked) == [p.person_id for p in people[1:]]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("deid_nb")] == [f"{method}: {reason}; skipped"]


BAD_BASELINE_CALLS = {  # case: (people, method, keyword arguments, error type, message)
    "unknown method": (
        PEOPLE,
        "nope",
        {},
        KeyError,
        "unknown baseline 'nope'; choose one of ['idf', 'idf_table_aware', ",
    ),
    "idf without weights": (
        PEOPLE,
        "idf",
        {"fraction": 0.3},
        ValueError,
        "the 'idf' baseline needs idf weights (see dataset_idf)",
    ),
    "idf without fraction": (
        PEOPLE,
        "idf",
        {"idf": IDF},
        ValueError,
        "the 'idf' baseline needs fraction= in [0, 1], got None",
    ),
    "fraction above 1": (
        PEOPLE,
        "idf_table_aware",
        {"idf": IDF, "fraction": 1.5},
        ValueError,
        "the 'idf_table_aware' baseline needs fraction= in [0, 1], got 1.5",
    ),
    "unknown parameter": (
        PEOPLE,
        "lexical",
        {"colour": 3},
        ValueError,
        "baseline 'lexical' cannot run with parameters {'colour': 3}: lexical_redact() got an unexpected keyword argument 'colour'",
    ),
    "unknown entity type": (
        PEOPLE,
        "named_entity",
        {"entity_types": ("PERSON", "ALIEN")},
        ValueError,
        "baseline 'named_entity' cannot run with parameters {'entity_types': ('PERSON', 'ALIEN')}: unknown spaCy entity type(s) ['ALIEN']",
    ),
    "a string for people": (
        "Alma paints",
        "lexical",
        {},
        TypeError,
        "people must be a sequence of Person records, got one str",
    ),
    "one Person for people": (
        PEOPLE[0],
        "lexical",
        {},
        TypeError,
        "people must be a sequence of Person records, got one Person",
    ),
}


@pytest.mark.parametrize(
    "people,method,kwargs,error,message", BAD_BASELINE_CALLS.values(), ids=BAD_BASELINE_CALLS.keys()
)
def test_bad_baseline_call_is_an_error(people, method, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        redact_people(people, method, progress=False, **kwargs)


# ---------------------------------------------------------------- metrics: every bad call is an error naming the document
BAD_METRIC_CALLS = {  # case: (call, error type, message)
    "lengths differ": (lambda: percent_masked(["a"], ["a", "b"]), ValueError, "1 masked documents but 2 originals"),
    "masks added": (
        lambda: percent_masked(["x", "<mask> <mask> <mask>"], ["x", "a b"]),
        ValueError,
        "document 1: 3 masks added to an original of 2 words: not a masking of that original",
    ),
    "empty original": (
        lambda: percent_masked(["a b"], [""]),
        ValueError,
        "document 0: 0 masks added to an original of 0 words (no words): not a masking of that original",
    ),
    "masked text missing": (
        lambda: percent_masked(["a", None], ["a", "b"]),
        TypeError,
        "document 1: the masked text is a NoneType, not a string",
    ),
    "original a number": (
        lambda: information_loss(["a"], [7]),
        TypeError,
        "document 0: the original text is a int, not a string",
    ),
    "unknown average": (
        lambda: percent_masked(["a"], ["a"], average="median"),
        ValueError,
        "average must be 'document' or 'corpus', got 'median'",
    ),
    "ids and documents differ": (
        lambda: reidentification_ranks(["a"], ["x", "y"], [POOL]),
        ValueError,
        "1 documents but 2 true ids",
    ),
    "empty ensemble": (
        lambda: reidentification_ranks(["a"], [PID], []),
        ValueError,
        "the ensemble has no re-identifiers",
    ),
    "same names twice": (
        lambda: reidentification_ranks(["a"], [PID], [POOL, POOL]),
        ValueError,
        "re-identifier names are not unique: ['word_overlap', 'word_overlap']; pass a dict",
    ),
    "id outside the pool": (
        lambda: reidentification_ranks(["a"], ["stranger"], [POOL]),
        KeyError,
        "word_overlap: 1 id(s) not in the candidate pool, e.g. ['stranger']",
    ),
    "text of a stranger": (
        lambda: evaluate_masking({"stranger": "a"}, PEOPLE, [POOL]),
        KeyError,
        "1 text id(s) are not among the people, e.g. ['stranger']",
    ),
    "text missing": (
        lambda: evaluate_masking({PID: None}, PEOPLE, [POOL]),
        TypeError,
        f"person {PID}: the text to evaluate is a NoneType, not a string",
    ),
}


@pytest.mark.parametrize("call,error,message", BAD_METRIC_CALLS.values(), ids=BAD_METRIC_CALLS.keys())
def test_bad_metric_call_is_an_error(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_metrics_of_nothing_are_nan_not_an_error():
    "An empty selection (every record skipped upstream) measures as NaN, so a table row can still be written."
    assert pd.isna(percent_masked([], []))
    row = evaluate_masking({}, PEOPLE, [POOL])
    assert row["documents"] == 0 and all(
        pd.isna(row[c]) for c in ("ensemble_reid", "percent_masked", "information_loss")
    )


# ---------------------------------------------------------------- deidentify: bad records skipped and reported, or raised
BAD_DOCUMENTS = {  # case: (document, true id, reason)
    "empty": ("", PID, "the document has no words"),
    "punctuation only": (" .,; ", PID, "the document has no words"),
    "not a string": (3, PID, "the document is not a string"),
    "stranger": ("Alma paints", "stranger", "the true id is not in the re-identifier's candidate pool"),
}


@pytest.mark.parametrize("document,true_id,reason", BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_deidentify_skips_and_reports_a_bad_record(document, true_id, reason, caplog):
    with caplog.at_level(logging.WARNING, logger="deid_nb"):
        batch = deidentify([PEOPLE[0].document, document], POOL, k=2, true_ids=[PID, true_id])
    assert [r.certificate.person_id for r in batch] == [PID] and batch.positions == [0]
    assert [(s.where, s.person_id, s.reason) for s in batch.skipped] == [("document 1", true_id, reason)]
    assert f"document 1 (id {true_id!r}): {reason}; skipped" in caplog.text


@pytest.mark.parametrize("document,true_id,reason", BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_deidentify_raises_a_bad_record_when_asked(document, true_id, reason):
    with pytest.raises(DataError, match=re.escape(f"document 1 (id {true_id!r}): {reason}")):
        deidentify([PEOPLE[0].document, document], POOL, k=2, true_ids=[PID, true_id], on_error="raise")


BAD_DEIDENTIFY_CALLS = {  # case: (keyword arguments, message)
    "k zero": ({"k": 0}, "k must be an integer >= 1 (the true profile must leave the top k), got 0"),
    "k a float": ({"k": 2.5}, "k must be an integer >= 1 (the true profile must leave the top k), got 2.5"),
    "unknown search": (
        {"search": "beam"},
        "unknown search 'beam'; choose one of ['approximate', 'greedy'] or pass a search function",
    ),
    "unknown unit": ({"unit": "sentence"}, "unknown masking unit 'sentence'; choose one of ('type', 'token')"),
    "unknown policy": (
        {"long_documents": "drop"},
        "unknown long_documents policy 'drop'; choose one of ('windows', 'mask_tail', 'truncate')",
    ),
    "unknown on_error": ({"on_error": "ignore"}, "on_error must be one of ('skip', 'raise'), got 'ignore'"),
    "strings without ids": (
        {"documents": ["Alma paints"], "true_ids": None},
        "true_ids= is needed unless the documents are Person objects",
    ),
    "ids and documents differ": ({"documents": ["Alma paints"], "true_ids": [PID, PID]}, "1 documents but 2 true ids"),
}


@pytest.mark.parametrize("kwargs,message", BAD_DEIDENTIFY_CALLS.values(), ids=BAD_DEIDENTIFY_CALLS.keys())
def test_bad_deidentify_call_is_an_error(kwargs, message):
    kwargs = {"documents": PEOPLE[:2], **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        deidentify(kwargs.pop("documents"), POOL, **kwargs)


# ---------------------------------------------------------------- the CLI: exit status 1 with the reason, nothing written
TABLE = [
    "--id",
    "id",
    "--text",
    "document",
    "--profile-cols",
    "name",
    "birth_date",
    "birth_place",
    "nationality",
    "occupation",
]


@pytest.fixture()
def folder(tmp_path):
    pd.DataFrame([{"id": p.person_id, "document": p.document, **p.profile} for p in PEOPLE]).to_csv(
        tmp_path / "people.csv", index=False
    )
    (tmp_path / "stranger.jsonl").write_text(json.dumps({"id": "stranger", "text": "x"}) + "\n")
    (tmp_path / "broken.jsonl").write_text(json.dumps({"id": PID, "text": "x"}) + "\n{not json\n")
    (tmp_path / "outside.jsonl").write_text(json.dumps({"id": PID, "text": "x", "spans": [[0, 10**6]]}) + "\n")
    return tmp_path


BAD_CLI_CALLS = {  # case: (arguments; {folder} is the test's folder, message on stderr)
    "missing column": ("deidentify {f}/people.csv --id person --reidentifier bm25 -o {f}/out.jsonl", "missing column"),
    "missing table": ("deidentify {f}/nobody.csv --reidentifier bm25 -o {f}/out.jsonl", "nobody.csv"),
    "too few people to train": ("deidentify {f}/people.csv {table} --k 2 -o {f}/out.jsonl", "needs no training"),
    "k larger than the pool": ("deidentify {f}/people.csv {table} --k 50 --reidentifier bm25 -o {f}/out.jsonl", "k=50"),
    "not a saved model": ("deidentify {f}/people.csv {table} --model {f} -o {f}/out.jsonl", "deidentifier.json"),
    "redaction of a stranger": (
        "report {f}/stranger.jsonl --people {f}/people.csv {table} --no-infill -o {f}/out",
        "'stranger' is not among the people",
    ),
    "broken JSON line": ("report {f}/broken.jsonl --people {f}/people.csv {table} --no-infill -o {f}/out", "line 2"),
    "spans outside the document": (
        "report {f}/outside.jsonl --people {f}/people.csv {table} --no-infill -o {f}/out",
        "'spans' must be [start, end] character pairs inside the original",
    ),
}


@pytest.mark.parametrize("arguments,message", BAD_CLI_CALLS.values(), ids=BAD_CLI_CALLS.keys())
def test_bad_cli_call_exits_1_and_writes_nothing(folder, arguments, message):
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        status = main(arguments.format(f=folder, table=" ".join(TABLE)).split())
    assert status == 1 and message in errors.getvalue(), errors.getvalue()
    assert not (folder / "out.jsonl").exists() and not (folder / "out").exists()


# ---------------------------------------------------------------- interrupted runs, bad caches and empty inputs (issue 32)
def test_killed_forced_rerun_leaves_the_task_not_done(tmp_path, monkeypatch):
    notebook = nbformat.v4.new_notebook(metadata={"deid_nb": {"experiment": True, "datasets": ["a"]}})
    notebook.cells = [nbformat.v4.new_code_cell("dataset, size = 'x', 'quick'", metadata={"tags": ["parameters"]})]
    nbformat.write(notebook, tmp_path / "20_x.ipynb")
    plan = RunPlan(experiment_notebooks(tmp_path), runs_dir=tmp_path / "runs")
    ((path, dataset),) = plan.tasks()
    output, fingerprint = (
        plan.output_path(path, dataset),
        task_fingerprint(path, {"dataset": "a", "size": "default"}),
    )
    output.parent.mkdir(parents=True)
    output.with_suffix(".done.json").write_text(
        json.dumps({"fingerprint": fingerprint, "seconds": 1.0})
    )  # an earlier complete run
    assert is_done(output, fingerprint)

    def killed(notebook, output, **kwargs):
        Path(output).write_text("{}")  # half the notebook written, then the process is killed
        raise KeyboardInterrupt

    monkeypatch.setattr(papermill, "execute_notebook", killed)
    with pytest.raises(KeyboardInterrupt):
        reproduce(plan, force=True)
    assert not is_done(output, fingerprint)


TINY = BiEncoder(tiny_config())


@pytest.mark.parametrize("shape", [(5, 64), (6, 32)], ids=["too few rows", "wrong dimension"])
def test_profile_cache_of_the_wrong_size_is_recomputed(tmp_path, caplog, shape):
    path = profile_cache_path(TINY, PEOPLE, tmp_path)
    save_file({"profile_embeddings": torch.zeros(shape)}, str(path))
    with caplog.at_level(logging.WARNING, logger="deid_nb"):
        embeddings = cached_profile_embeddings(TINY, PEOPLE, tmp_path)
    assert tuple(embeddings.shape) == (len(PEOPLE), 64)
    assert caplog.records[0].getMessage().startswith(f"{path}: cached profile embeddings of shape {shape}, not (6, 64)")


def test_truncated_caches_are_recomputed_naming_the_file(tmp_path, caplog):
    expected = cached_profile_embeddings(TINY, PEOPLE, tmp_path)
    path = profile_cache_path(TINY, PEOPLE, tmp_path)
    path.write_bytes(path.read_bytes()[:50])
    json_cache = tmp_path / "results.json"
    json_cache.write_text('{"p1": [1, 2')
    with caplog.at_level(logging.WARNING, logger="deid_nb"):
        assert torch.allclose(cached_profile_embeddings(TINY, PEOPLE, tmp_path), expected)
        assert cached_json(json_cache, lambda: {"p1": [1, 2]}) == {"p1": [1, 2]}
    assert [r.getMessage().split(": unreadable cache file")[0] for r in caplog.records] == [str(path), str(json_cache)]


def test_truncated_user_model_is_one_line_naming_the_file(tmp_path):
    save_model(TINY, tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ValueError) as error:
        load_model(tmp_path)
    assert str(error.value).startswith(f"{weights}: not readable weights of this model") and "\n" not in str(
        error.value
    )


@pytest.mark.parametrize("name", ["../evil", "a/../../evil"])
def test_reidentifier_names_cannot_place_files_outside_artifacts(name, tmp_path, monkeypatch):
    monkeypatch.setenv("DEID_NB_ARTIFACTS", str(tmp_path))
    dataset = PeopleDataset.from_people("synthetic6", PEOPLE)
    with pytest.raises(ValueError, match=f"re-identifier name {re.escape(repr(name))} cannot be used in a file name"):
        load_reidentifier(name, dataset, registry={name: None})
    named = WordOverlapReidentifier(PEOPLE, seed=1)
    named.name = name
    with pytest.raises(ValueError, match="cannot be used in a file name"):
        nn_deid_results(PEOPLE[:1], named, "synthetic6", "quick", 1, search="greedy", progress=False)
    assert not list(tmp_path.rglob("evil*")) and not list(tmp_path.parent.glob("evil*"))  # nothing landed anywhere


def test_empty_knowledge_base_is_a_clear_error():
    with pytest.raises(ValueError, match="knowledge base: no passages to retrieve from"):
        SparseRetriever(KnowledgeBase([]))


def test_empty_sentence_gets_empty_tags():
    words = random_embeddings({"alma", "paints"}, dim=8)
    torch.manual_seed(0)
    tagger = BiLSTMCRF(words.dim, TaggerConfig(hidden=8))
    sentence, empty = (
        TaggedSentence("d", ["alma", "paints"], [0, 5], [4, 11], ["B-PERSON", "O"]),
        TaggedSentence("e", [], [], [], []),
    )
    tags = predict_tags(tagger, [empty, sentence, empty], words)
    assert tags[0] == tags[2] == [] and len(tags[1]) == 2
    assert predict_tags(tagger, [empty], words) == [[]]


def test_tab_recall_with_nothing_to_mask_is_nan():
    calm = parse_tab_document(
        {
            "doc_id": "calm",
            "text": "The weather was fine.",
            "annotations": {
                "a1": {
                    "entity_mentions": [
                        dict(
                            entity_id="e1",
                            start_offset=4,
                            end_offset=11,
                            span_text="weather",
                            entity_type="MISC",
                            identifier_type="NO_MASK",
                        )
                    ]
                }
            },
        }
    )
    scores = TabScorer([calm], spacy_model="sm").scores({"calm": []})
    assert all(
        math.isnan(scores[k])
        for k in ("token_recall", "mention_recall", "recall_all_entities", "recall_direct_entities")
    )

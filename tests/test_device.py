"""One device rule (issue 36, item 1): `resolve_device` — an explicit argument, else $DEID_NB_DEVICE, else auto — reaches every
component that builds or loads a model, `deid-nb --device` sets it for a run and the model-loading commands print it. CPU only."""

import contextlib
import io
import os
import subprocess
import sys
import types

import pandas as pd
import pytest
import torch

import deid_nb.adversarial.representation as representation
import deid_nb.adversarial.tagger as tagger
import deid_nb.adversarial.training as adversarial_training
import deid_nb.causal_lm as causal_lm
import deid_nb.infill.retrieval as retrieval
import deid_nb.nn_deid.model as model_module
import deid_nb.nn_deid.registry as registry
import deid_nb.nn_deid.training as training
import deid_nb.nn_deid.training_run as training_run
import deid_nb.sanitize.recogniser as recogniser
import deid_nb.sanitize.sequence_labelling as sequence_labelling
from deid_nb.adversarial.pii_data import TaggedSentence
from deid_nb.adversarial.word_embeddings import random_embeddings
from deid_nb.core import resolve_device
from deid_nb.data import PeopleDataset, make_synthetic_people
from deid_nb.encoders import TINY_ENCODER, device_summary
from deid_nb.cli import main

CUDA = torch.cuda.is_available()


@pytest.fixture(autouse=True)
def no_device_setting(monkeypatch):
    monkeypatch.delenv("DEID_NB_DEVICE", raising=False)


@pytest.fixture
def asked(monkeypatch):
    "Record every call of `resolve_device` in the given modules (answering the real rule)."
    calls = []

    def spy(*modules):
        for module in modules:
            monkeypatch.setattr(
                module, "resolve_device", lambda device=None: calls.append(device) or resolve_device(device)
            )
        return calls

    return spy


# ---------------------------------------------------------------- the rule
def test_precedence_argument_then_variable_then_auto(monkeypatch):
    test_auto = torch.device("cuda" if CUDA else "cpu")
    assert resolve_device() == resolve_device(None) == resolve_device("auto") == test_auto
    monkeypatch.setenv("DEID_NB_DEVICE", "cpu")
    assert resolve_device() == torch.device("cpu")
    monkeypatch.setenv("DEID_NB_DEVICE", "cuda:99")  # a device no machine here has: read, it would be an error
    assert resolve_device("auto") == test_auto  # an explicit argument wins over the variable
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("meta")) == torch.device("meta")
    with pytest.raises(ValueError, match=r"\$DEID_NB_DEVICE"):
        resolve_device()  # without an argument the variable is read
    monkeypatch.setenv("DEID_NB_DEVICE", "  ")
    assert resolve_device() == test_auto  # an empty variable is no setting


@pytest.mark.parametrize("bad", ["gpu", "cuda:", "cuda:x", "cpu:0", "mps", ""])
def test_bad_strings_are_one_line_errors(bad, monkeypatch):
    with pytest.raises(ValueError, match="the device argument must be auto, cpu, cuda or cuda:N") as error:
        resolve_device(bad)
    assert "\n" not in str(error.value)
    if bad:
        monkeypatch.setenv("DEID_NB_DEVICE", bad)
        with pytest.raises(ValueError, match=r"\$DEID_NB_DEVICE \(or deid-nb --device\) must be"):
            resolve_device()


@pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")
@pytest.mark.parametrize("request_", ["cuda", "cuda:0", "CUDA:1"])
def test_cuda_without_cuda_is_a_one_line_error(request_, monkeypatch):
    with pytest.raises(ValueError, match="but torch sees no CUDA device here; use cpu or auto") as error:
        resolve_device(request_)
    assert "\n" not in str(error.value) and "the device argument" in str(error.value)
    monkeypatch.setenv("DEID_NB_DEVICE", request_)
    with pytest.raises(ValueError, match=r"\$DEID_NB_DEVICE"):
        resolve_device()


def test_core_does_not_import_torch():
    code = "import sys, deid_nb.core; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_summary_names_device_and_native_precision():
    assert device_summary("cpu") in ("device: cpu", "device: cpu, bfloat16")


# ---------------------------------------------------------------- the command line
def _run(arguments):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in arguments])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def table(tmp_path):
    five = make_synthetic_people(5, seed=3)
    pd.DataFrame([{"id": p.person_id, "document": p.document, **p.profile} for p in five]).to_csv(
        tmp_path / "people.csv", index=False
    )
    return [tmp_path / "people.csv", "--id", "id", "--text", "document", "--profile-cols", "name", "occupation"]


def test_device_flag_is_accepted_and_printed_first(table, tmp_path):
    status, out, err = _run(
        ["--device", "cpu", "redact", *table, "--method", "lexical", "-o", tmp_path / "lexical.jsonl"]
    )
    assert status == 0, err
    assert out.splitlines()[0] in ("device: cpu", "device: cpu, bfloat16")
    assert "DEID_NB_DEVICE" not in os.environ  # set for the run only


def test_commands_print_the_rule_without_the_flag(table, tmp_path):
    status, out, _ = _run(["deidentify", *table, "--reidentifier", "bm25", "-o", tmp_path / "out.jsonl"])
    assert status == 0 and out.splitlines()[0] == device_summary()


@pytest.mark.parametrize(
    "device, message",
    [("tpu", "must be auto, cpu, cuda or cuda:N, got 'tpu'")]
    + ([] if CUDA else [("cuda", "asks for 'cuda', but torch sees no CUDA device here")]),
)
def test_bad_device_flag_is_one_line_before_any_work(device, message, table, tmp_path):
    status, out, err = _run(
        ["--device", device, "redact", *table, "--method", "lexical", "-o", tmp_path / "lexical.jsonl"]
    )
    assert status == 1 and message in err and "--device" in err and len(err.splitlines()) == 1
    assert out == "" and not (tmp_path / "lexical.jsonl").exists()


# ---------------------------------------------------------------- every component follows the rule
@pytest.fixture(scope="module")
def synthetic():
    return PeopleDataset.from_people("synthetic30", make_synthetic_people(30, seed=0))


def test_training_and_loading_follow_the_rule(synthetic, tmp_path, asked, monkeypatch):
    calls = asked(training_run, model_module)
    monkeypatch.setenv("DEID_NB_DEVICE", "cpu")
    config = training.TrainingConfig(epochs=1, batch_size=8, frozen_layers=0)
    trained = training_run.train_reidentifier(synthetic, model_module.tiny_config(), config, tmp_path, progress=False)
    assert trained.model.device.type == "cpu" and calls[:1] == [None]
    loaded = model_module.load_model(trained.directory / trained.record["checkpoint"])
    assert loaded.device.type == "cpu" and calls[-1] is None


def test_registry_models_and_reidentifier_follow_the_rule(synthetic, asked, tmp_path):
    calls = asked(registry)
    reidentifier = registry.load_reidentifier(registry.ZERO_SHOT, synthetic, tmp_path)
    assert calls == [None] and reidentifier.model.device == resolve_device()
    assert (
        reidentifier.profile_embeddings.device == reidentifier.model.device
    )  # the search and ensemble follow model.device
    scores = reidentifier.score([synthetic.people[0].document])
    assert scores.shape == (1, len(synthetic.people))


def test_causal_lm_follows_the_rule(tmp_path, asked):
    model, tokenizer = causal_lm.tiny_causal_lm()
    model.save_pretrained(tmp_path / "lm")
    tokenizer.save_pretrained(tmp_path / "lm")
    calls = asked(causal_lm)
    loaded, _ = causal_lm.load_causal_lm(str(tmp_path / "lm"))
    assert calls == [None] and next(loaded.parameters()).device == resolve_device()


def test_dense_reranker_follows_the_rule(tmp_path, asked):
    calls = asked(retrieval)
    reranker = retrieval.DenseReranker("minilm", cache_dir=tmp_path)
    assert calls == [None] and reranker.encoder.device.type == resolve_device().type


def test_recogniser_follows_the_rule(asked):
    calls = asked(recogniser)
    text = "Alma Arden was born in Bergen in 1950."
    config = recogniser.RecogniserConfig(epochs=1, max_length=16, random_init=TINY_ENCODER)
    model, tokenizer, _ = recogniser.train_token_classifier([text], [[(0, 10, "PERSON")]], config)
    assert calls == [None] and model.device == resolve_device()
    assert isinstance(recogniser.EntityRecogniser(model, tokenizer).recognise(text), list)


def test_sequence_labeller_follows_the_rule(tmp_path, asked):
    calls = asked(sequence_labelling)
    docs = [types.SimpleNamespace(doc_id="a", text="Alma Arden was born in Bergen in 1950.")]
    spans = pd.DataFrame({"doc_id": ["a", "a"], "start": [0, 23], "end": [10, 29], "mask": [True, False]})
    indicator = sequence_labelling.SequenceLabellingIndicator(
        epochs=1, random_init=TINY_ENCODER, artifacts_dir=tmp_path
    ).fit(docs, spans)
    assert calls == [None] and indicator.model.device == resolve_device()
    assert indicator.risk(docs, spans).shape == (2,)


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


def test_tagger_follows_the_rule(tmp_path, asked):
    calls = asked(tagger)
    sentences, words = _tagged()
    model, _ = tagger.train_tagger(
        sentences,
        sentences,
        words,
        tagger.TaggerConfig(hidden=4, layers=1, max_epochs=1, batch_size=2),
        artifacts_dir=tmp_path,
    )
    assert calls == [None] and tagger.module_device(model) == resolve_device()


def test_adversarial_representation_follows_the_rule(tmp_path, asked):
    calls = asked(adversarial_training)
    sentences, words = _tagged()
    config = representation.AdversarialConfig(
        dim=4,
        hidden=4,
        adversary_hidden=2,
        n_neighbours=2,
        max_epochs=1,
        batch_size=2,
        tagger=tagger.TaggerConfig(hidden=4, layers=1),
    )
    model, _ = adversarial_training.train_adversarial(
        sentences, sentences, words, config, method="dann", artifacts_dir=tmp_path
    )
    assert calls == [None] and tagger.module_device(model) == resolve_device()
    data = adversarial_training.pair_data(sentences, words, 2)
    result = adversarial_training.retrain_adversary(model.representation, data, data, epochs=1, hidden=2, batch_size=2)
    assert calls == [None, None] and 0 <= result["accuracy"] <= 1

"""Issue 33 (friction): no warning that is not a problem. Long documents are cut into windows on purpose, so counting their tokens
says nothing about "indexing errors"; a Jupyter kernel without ipywidgets gets text progress bars without a TqdmWarning; a normal
de-identification logs nothing at WARNING."""

import logging
import os
import subprocess
import sys
from pathlib import Path

from transformers import AutoTokenizer

from deid_nb.encoders import resolve_encoder
from deid_nb.masking import text_units
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.windows import split_windows
from deid_nb.people import make_synthetic_people
from deid_nb.reidentifier import WordOverlapReidentifier

ROOT = Path(__file__).resolve().parents[1]
LENGTH_WARNING = "Token indices sequence length is longer than the specified maximum sequence length"


def _warned(caplog) -> bool:
    return any(LENGTH_WARNING in record.getMessage() for record in caplog.records)


def test_windowing_a_long_document_says_nothing(caplog):
    "MiniLM reads 512 tokens; a 900-word document is cut into windows, quietly (a fresh tokenizer warns once, on its first long text)."
    tokenizer = AutoTokenizer.from_pretrained(resolve_encoder("minilm"))
    with caplog.at_level(logging.WARNING, logger="transformers"):
        assert len(split_windows("word " * 900, tokenizer, 512)) == 2
        assert not _warned(caplog)
        tokenizer("word " * 900)  # the warning this test would see, had the windowing not asked for quiet
        assert _warned(caplog)


def _kernel_like(code: str) -> str:
    "stderr of `code` run as in a Jupyter kernel without ipywidgets (where tqdm.auto warns), every warning shown."
    prelude = "import ipykernel.zmqshell, warnings; warnings.simplefilter('always'); "
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, env=env, check=True
    ).stderr


def test_no_ipywidgets_warning_in_a_kernel():
    "The package's first module to load tqdm.auto (here through the baselines) does so after core silenced its IProgress warning."
    assert "IProgress not found" in _kernel_like("import tqdm.auto")  # what a kernel shows without the package's filter
    assert "IProgress not found" not in _kernel_like("import deid_nb.baselines")


class _UnitTokenizer:
    "A stand-in tokenizer: one token per unit, plus two special tokens (called as `_n_tokens` calls a real one)."

    mask_token = "[MASK]"

    def __call__(self, text, truncation=False, verbose=True):
        return {"input_ids": [0] * (len(text_units(text)) + 2)}


class ShortSighted(WordOverlapReidentifier):
    "The word-overlap test double reading only its first 8 units, and saying so: documents are cut into windows."

    def document_window(self):
        return _UnitTokenizer(), 10


def test_a_normal_deidentification_warns_of_nothing(caplog):
    "Windows, their re-checks and certificates: INFO lines at most."
    people = make_synthetic_people(30, seed=0)
    with caplog.at_level(logging.INFO, logger="deid_nb"):
        results = deidentify(people[:10], ShortSighted(people, seed=1, max_words=8), k=3)
    assert max(r.certificate.windows for r in results) >= 2  # long documents were windowed
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []

"""Part of the pool (issue 36, item 2): scoring a shortlist changes no score, a hybrid's BM25 channel stays standardised over
the whole pool, and for random pools, shortlists and K every certificate `deidentify` writes holds under the exact rank."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from deid_nb.nn_deid.certificate import audit_certificates, verify_certificate
from deid_nb.nn_deid.deidentify import deidentify, searched_pool
from deid_nb.nn_deid.hybrid import HybridReidentifier
from deid_nb.nn_deid.index import ExactIndex
from deid_nb.nn_deid.model import BiEncoder, tiny_config
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.people import make_synthetic_people
from deid_nb.reidentifier import BM25Reidentifier, WordOverlapReidentifier

PEOPLE = make_synthetic_people(48, seed=3)
IDS = [p.person_id for p in PEOPLE]


@pytest.fixture(scope="module")
def models():
    "The re-identifiers a shortlist must serve: BM25, a tiny bi-encoder (dense and indexed), the hybrid, a black box."
    torch.manual_seed(0)
    neural = NeuralReidentifier(BiEncoder(tiny_config()), PEOPLE, "tiny")
    indexed = NeuralReidentifier(
        neural.model, PEOPLE, "tiny", index=ExactIndex(neural.profile_embeddings.numpy(), chunk_size=7)
    )
    return {
        "bm25": BM25Reidentifier(PEOPLE),
        "neural": neural,
        "indexed": indexed,
        "hybrid": HybridReidentifier(neural, PEOPLE, lexical_weight=1.0),
        "black box": WordOverlapReidentifier(PEOPLE),
    }


@pytest.mark.parametrize("name", ["bm25", "neural", "indexed", "hybrid", "black box"])
def test_a_part_scores_as_the_whole(models, name):
    "Restricted to any columns, every score is the whole pool's at those columns (the hybrid's BM25 z-scores included)."
    model, rng = models[name], np.random.default_rng(0)
    texts = [PEOPLE[0].document, "<mask> " + PEOPLE[5].document[:60], "zzz qqq"]
    for size in (1, 5, 30):
        columns = np.sort(rng.choice(len(PEOPLE), size, replace=False))
        np.testing.assert_allclose(
            model.restricted_to(columns).score(texts), model.score(texts)[:, columns], rtol=1e-4, atol=1e-4
        )
        np.testing.assert_allclose(
            model.score_columns(texts, columns[::-1]), model.score(texts)[:, columns[::-1]], rtol=1e-4, atol=1e-4
        )


def test_the_pool_moments_are_the_rows(models):
    "BM25's whole-pool mean and deviation from the query's own terms equal those of the scored rows, also from a part."
    bm25 = models["hybrid"].bm25
    texts = [p.document for p in PEOPLE[:6]] + ["<mask> <mask>", PEOPLE[7].document.replace(" ", " <mask> ", 3)]
    rows = bm25.score(texts).astype(np.float64)
    for source in (bm25, bm25.restricted_to([0, 3, 9])):
        mean, sd = source.pool_moments(texts)
        np.testing.assert_allclose(mean, rows.mean(1), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(sd, rows.std(1), rtol=1e-6, atol=1e-9)


def test_searched_pool_covers_the_shortlists(models):
    "The searched part holds each text's shortlist and its person; no shortlist is the whole pool itself."
    model = models["hybrid"]
    texts, ids = [p.document for p in PEOPLE[:4]], IDS[:4]
    part = searched_pool(model, texts, ids, 3)
    assert set(ids) <= set(part.candidate_ids) and len(part.candidate_ids) < len(PEOPLE)
    for row in model.shortlist(texts, 3):
        assert {IDS[j] for j in row} <= set(part.candidate_ids)
    assert searched_pool(model, texts, ids, None) is model


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["bm25", "hybrid", "indexed"]),
    start=st.integers(0, 40),
    n=st.integers(1, 6),
    shortlist=st.integers(1, 12),
    k=st.integers(1, 6),
    chunk_size=st.integers(1, 4),
)
def test_every_certificate_on_a_shortlist_holds(models, name, start, n, shortlist, k, chunk_size):
    "Property: for random documents, shortlist sizes, K and chunks, a met certificate verifies and the exact rank is >= K."
    model, people = models[name], PEOPLE[start : start + n]
    results = deidentify(people, model, k, shortlist=shortlist, chunk_size=chunk_size, long_documents="truncate")
    exact = model.ranks([r.text for r in results], [p.person_id for p in people])
    for result, rank in zip(results, exact):
        certificate = result.certificate
        assert certificate.shortlist < len(PEOPLE)  # 0: the shortlists covered the whole pool
        assert certificate.rank <= rank  # counted among the candidates scored: a lower bound
        if certificate.goal_met:
            assert rank >= k
            assert verify_certificate(result.text, certificate, model).ok
    audit = audit_certificates([r.text for r in results], [r.certificate for r in results], model)
    assert audit["reidentified"] == 0 and audit["verified"] == audit["certified"]

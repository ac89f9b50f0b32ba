"""The candidate index (nbs/12b_index.ipynb): exact scores are today's, FAISS flat finds the exact ranks, memory-mapped G is G,
and a rank or certificate computed on any shortlist never overstates the exact full-pool rank."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from safetensors.torch import save_file

from deid_nb.nn_deid.certificate import certify, verify_certificate
from deid_nb.nn_deid.index import (
    ExactIndex,
    open_profile_embeddings,
    profile_index,
    save_profile_embeddings,
    shortlist_ranks,
    shortlist_scores,
)
from deid_nb.nn_deid.model import BiEncoder, tiny_config
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.people import make_synthetic_people
from deid_nb.reidentifier import Reidentifier, ranks_from_scores


@pytest.fixture(scope="module")
def tiny():
    "A tiny random bi-encoder over 40 synthetic people, its dense re-identifier, and 8 documents with their people."
    people = make_synthetic_people(40, seed=1)
    torch.manual_seed(0)
    model = BiEncoder(tiny_config())
    return (
        model,
        people,
        NeuralReidentifier(model, people, "tiny"),
        [p.document for p in people[:8]],
        [p.person_id for p in people[:8]],
    )


def test_exact_index_scores_are_todays(tiny, tmp_path):
    "Through an ExactIndex (one chunk, or a memory map) the re-identifier's scores and ranks are today's, bit for bit."
    model, people, dense, documents, ids = tiny
    in_memory = NeuralReidentifier(model, people, "tiny", index=ExactIndex(dense.profile_embeddings.numpy()))
    mapped = NeuralReidentifier(model, people, "tiny", index=profile_index(model, people, tmp_path))
    for indexed in (in_memory, mapped):
        assert np.array_equal(indexed.score(documents), dense.score(documents))
        assert np.array_equal(indexed.ranks(documents, ids), dense.ranks(documents, ids))
    chunked = ExactIndex(dense.profile_embeddings.numpy(), chunk_size=7)
    queries = (dense.scale * dense.embed_documents(documents)).numpy()
    np.testing.assert_allclose(chunked.scores(queries), dense.score(documents), rtol=1e-5, atol=1e-5)
    assert np.array_equal(chunked.ranks(queries, dense.columns(ids)), dense.ranks(documents, ids))
    with pytest.raises(ValueError, match="fixed by its index"):
        in_memory.add_profiles(make_synthetic_people(2, seed=9))
    with pytest.raises(ValueError, match="an index of"):
        NeuralReidentifier(model, people[:5], "tiny", index=chunked)


def test_memory_mapped_embeddings_equal_in_memory(tmp_path):
    "G written by safetensors (as the profile cache is) or chunk by chunk maps back equal, and as a memory map."
    G = torch.randn(300, 24)
    save_file({"profile_embeddings": G}, str(tmp_path / "cache.safetensors"))
    mapped = open_profile_embeddings(tmp_path / "cache.safetensors")
    assert isinstance(mapped, np.memmap) and np.array_equal(mapped, G.numpy())
    save_profile_embeddings(tmp_path / "chunked.safetensors", (G[i : i + 64].numpy() for i in range(0, 300, 64)), n=300)
    assert np.array_equal(open_profile_embeddings(tmp_path / "chunked.safetensors"), G.numpy())
    save_file({"other": G}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="expected one float32 matrix"):
        open_profile_embeddings(tmp_path / "other.safetensors")


def test_faiss_flat_agrees_with_exact_ranks():
    "FAISS flat finds the exact top-M; its shortlist ranks equal the exact ranks below M; IVF/HNSW ranks never exceed them."
    faiss_index = pytest.importorskip("deid_nb.nn_deid.index")
    if faiss_index.faiss is None:
        pytest.skip("faiss-cpu is not installed (the [faiss] extra)")
    rng = np.random.default_rng(0)
    G, queries = rng.standard_normal((2000, 32)).astype(np.float32), rng.standard_normal((30, 32)).astype(np.float32)
    exact, flat = ExactIndex(G, chunk_size=500), faiss_index.FaissIndex(G, "flat")
    assert np.array_equal(flat.search(queries, 10)[0], exact.search(queries, 10)[0])
    true_columns = rng.integers(0, 2000, 30)
    exact_ranks = exact.ranks(queries, true_columns)
    short = shortlist_ranks(flat, queries, true_columns, 50)
    assert np.array_equal(short[exact_ranks < 50], exact_ranks[exact_ranks < 50]) and (short <= exact_ranks).all()
    for approximate in (faiss_index.FaissIndex(G, "ivf", nprobe=4), faiss_index.FaissIndex(G, "hnsw")):
        assert (shortlist_ranks(approximate, queries, true_columns, 50) <= exact_ranks).all()


class _Shortlisted(ExactIndex):
    "An index whose search returns a fixed, arbitrary set of columns: any index, however approximate, returns some subset."

    def __init__(self, embeddings, shortlist):
        super().__init__(embeddings, chunk_size=5)
        self.shortlist = np.asarray(sorted(shortlist), dtype=np.int64)

    def search(self, queries, top_m):
        columns = np.tile(self.shortlist[:top_m], (len(queries), 1))
        return columns, self.scores_of(queries, columns)


class _Embedded(Reidentifier):
    "A re-identifier whose 'texts' name query embeddings, scored exactly against the pool (what verify_certificate re-scores)."

    name = "embedded"

    def __init__(self, index, queries):
        super().__init__([f"p{i}" for i in range(len(index))])
        self.index, self.queries = index, queries

    def score_batch(self, documents):
        return self.index.scores(self.queries[[int(d.removeprefix("q")) for d in documents]])


@st.composite
def _pools(draw):
    "A pool on a coarse grid (dot products exact in float32, ties likely), queries, true columns, a shortlist and K."
    n, dim, n_queries = draw(st.integers(2, 30)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    grid = st.integers(-3, 3)
    G = (
        np.array(draw(st.lists(st.lists(grid, min_size=dim, max_size=dim), min_size=n, max_size=n)), dtype=np.float32)
        / 4
    )
    queries = (
        np.array(
            draw(st.lists(st.lists(grid, min_size=dim, max_size=dim), min_size=n_queries, max_size=n_queries)),
            dtype=np.float32,
        )
        / 4
    )
    true_columns = np.array(draw(st.lists(st.integers(0, n - 1), min_size=n_queries, max_size=n_queries)))
    shortlist = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
    return G, queries, true_columns, shortlist, draw(st.integers(1, n))


@settings(max_examples=80, deadline=None)
@given(_pools())
def test_a_shortlist_never_overstates_a_rank(pool):
    "For random pools, shortlists and K: the shortlist rank ≤ the exact rank, and a shortlist certificate verifies on the full pool."
    G, queries, true_columns, shortlist, k = pool
    index, exact = _Shortlisted(G, shortlist), ExactIndex(G)
    exact_ranks = ranks_from_scores(exact.scores(queries), true_columns)
    assert np.array_equal(exact.ranks(queries, true_columns), exact_ranks)
    assert (shortlist_ranks(index, queries, true_columns, len(shortlist)) <= exact_ranks).all()
    reidentifier = _Embedded(exact, queries)
    for i, column in enumerate(true_columns):
        scores = shortlist_scores(index, queries[i], int(column), len(shortlist))
        certificate = certify(f"q{i}", f"p{column}", reidentifier, k, scores=scores)
        assert certificate.rank <= exact_ranks[i]
        if certificate.goal_met:
            assert exact_ranks[i] >= k
            check = verify_certificate(f"q{i}", certificate, reidentifier)
            assert check.ok, check.problems

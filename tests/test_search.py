"""Search checks beside the notebook tests: trajectories replay, certificates hold, the fast search equals TextAttack's."""

import json

import numpy as np
import pytest
import torch

from deid_nb.data import make_synthetic_people
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.nn_deid.model import BiEncoder, tiny_config
from deid_nb.nn_deid.neural import NeuralReidentifier
from deid_nb.nn_deid.approximate_search import (
    approximate_search,
    approximate_search_many,
    prune_trajectories,
    resolve_ranking,
)
from deid_nb.nn_deid.search import Trajectory, Units, greedy_search
from deid_nb.nn_deid.textattack import textattack_search
from deid_nb.reidentifier import BM25Reidentifier, WordOverlapReidentifier


def test_replay_equals_fresh_run(people, toy):
    person = people[0]
    full = greedy_search(person.document, person.person_id, toy)
    for k in (1, 2, 5, 20):
        fresh = greedy_search(person.document, person.person_id, toy, max_k=k)
        assert fresh.masked_text_at_step(len(fresh)) == full.masked_text_at_k(k)
        assert fresh.ranks.tolist() == full.ranks[: len(fresh) + 1].tolist()


def test_units_survive_masking(people):
    units = Units.of(people[2].document)
    masked = Units.of(units.text([0, 3, 5]))
    assert len(masked) == len(units)
    assert [masked.is_mask(i) for i in (0, 3, 5)] == [True, True, True]


@pytest.mark.parametrize("search", ["greedy", "approximate"])
def test_certificates_reverify(people, toy, search):
    results = deidentify(people[:6], toy, k=3, search=search)
    assert all(r.certificate.goal_met for r in results)
    ranks = toy.ranks([r.text for r in results], [p.person_id for p in people[:6]])
    assert ranks.tolist() == [r.certificate.rank for r in results]


def test_approximate_uses_fewer_model_calls(people, toy):
    person = people[4]
    exact = greedy_search(person.document, person.person_id, toy, max_k=10)
    approximate = approximate_search(person.document, person.person_id, toy, max_k=10, top_m=2)
    assert approximate.ranks[-1] >= 10 and approximate.model_calls < exact.model_calls


def test_fast_search_equals_textattack(people):
    bm25 = BM25Reidentifier(people)
    for person in people[:3]:
        stock = textattack_search(person.document, person.person_id, bm25, max_k=5)
        fast = greedy_search(person.document, person.person_id, bm25, max_k=5)
        assert [(s.word, s.positions, s.rank) for s in stock.steps] == [
            (s.word, s.positions, s.rank) for s in fast.steps
        ]
        assert np.array_equal([s.score for s in stock.steps], [s.score for s in fast.steps])


def test_pruning_keeps_goal_with_fewer_masks(people, toy):
    documents, ids = [p.document for p in people[:5]], [p.person_id for p in people[:5]]
    plain = approximate_search_many(documents, ids, toy, max_k=8, top_m=1, prune=False)
    pruned = approximate_search_many(documents, ids, toy, max_k=8, top_m=1, prune=[2, 8])
    for a, b in zip(plain, pruned):
        assert a.ranks.tolist() == b.ranks.tolist() and a.pruned == {}
        for k in (2, 8):
            assert set(b.masked_positions_at_k(k)) <= set(a.masked_positions_at_k(k))
            assert toy.ranks(b.masked_text_at_k(k), b.true_id) == b.pruned_at_k(k)["rank"] >= k


def test_pruned_trajectory_survives_json(people, toy):
    t = prune_trajectories([greedy_search(people[1].document, people[1].person_id, toy, max_k=4)], toy)[0]
    back = Trajectory.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back.masked_text_at_k(4) == t.masked_text_at_k(4) and back.fraction_masked_at_k(4) == t.fraction_masked_at_k(
        4
    )


def test_last_layer_ranking_on_a_tiny_bi_encoder(people):
    "The default ranking for a BERT-style bi-encoder: lockstep = one at a time, exact ranks, certificates hold."
    torch.manual_seed(1)
    tiny = NeuralReidentifier(BiEncoder(tiny_config()), people, "tiny")
    assert resolve_ranking(tiny) == "last_layer"
    documents, ids = [p.document for p in people[:4]], [p.person_id for p in people[:4]]
    together = approximate_search_many(documents, ids, tiny, max_k=4)
    alone = [approximate_search(d, i, tiny, max_k=4) for d, i in zip(documents, ids)]
    assert [[s.positions for s in t.steps] for t in together] == [[s.positions for s in t.steps] for t in alone]
    for t in together:
        assert t.method.startswith("approximate(last_layer, top_m=1") and not t.pruned
        assert tiny.ranks(t.masked_text_at_step(len(t)), t.true_id) == t.ranks[-1]
    results = deidentify(people[:4], tiny, k=4, search="approximate")
    assert all(r.certificate.goal_met for r in results)

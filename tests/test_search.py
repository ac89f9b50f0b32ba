"""Search checks beside the notebook tests: trajectories replay, certificates hold, the fast search equals TextAttack's."""
import numpy as np
import pytest

from deid_nb.data import make_synthetic_people
from deid_nb.reidentifier import BM25Reidentifier
from deid_nb.search import Units, _ToyReidentifier, approximate_search, deidentify, greedy_search


@pytest.fixture(scope="module")
def people():
    return make_synthetic_people(30, seed=1)


@pytest.fixture(scope="module")
def toy(people):
    return _ToyReidentifier(people, seed=1)


def test_replay_equals_fresh_run(people, toy):
    person = people[0]
    full = greedy_search(person.document, person.person_id, toy)
    for k in (1, 2, 5, 20):
        fresh = greedy_search(person.document, person.person_id, toy, max_k=k)
        assert fresh.masked_text_at_step(len(fresh)) == full.masked_text_at_k(k)
        assert fresh.ranks.tolist() == full.ranks[:len(fresh) + 1].tolist()


def test_units_survive_masking(people):
    units = Units.of(people[2].document)
    masked = Units.of(units.text([0, 3, 5]))
    assert len(masked) == len(units)
    assert [masked.is_mask(i) for i in (0, 3, 5)] == [True, True, True]


@pytest.mark.parametrize("search", ["greedy", "approximate"])
def test_certificates_reverify(people, toy, search):
    results = deidentify(people[:6], None, toy, k=3, search=search)
    assert all(r.certificate.goal_met for r in results)
    ranks = toy.ranks([r.text for r in results], [p.person_id for p in people[:6]])
    assert ranks.tolist() == [r.certificate.rank for r in results]


def test_approximate_uses_fewer_model_calls(people, toy):
    person = people[4]
    exact = greedy_search(person.document, person.person_id, toy, max_k=10)
    approximate = approximate_search(person.document, person.person_id, toy, max_k=10, top_m=2)
    assert approximate.ranks[-1] >= 10 and approximate.model_calls < exact.model_calls


def test_fast_search_equals_textattack(people):
    from deid_nb.search_textattack import textattack_search
    bm25 = BM25Reidentifier(people)
    for person in people[:3]:
        stock = textattack_search(person.document, person.person_id, bm25, max_k=5)
        fast = greedy_search(person.document, person.person_id, bm25, max_k=5)
        assert [(s.word, s.positions, s.rank) for s in stock.steps] == [(s.word, s.positions, s.rank) for s in fast.steps]
        assert np.array_equal([s.score for s in stock.steps], [s.score for s in fast.steps])

"""Property tests (hypothesis): what deidentify hands out for a K meets that K when scored again, masks only grow along a
trajectory, % masked stays in [0, 100]."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from deid_nb.metrics import percent_masked
from deid_nb.nn_deid.deidentify import deidentify
from deid_nb.people import Person, make_synthetic_people
from deid_nb.reidentifier import BM25Reidentifier, WordOverlapReidentifier

WORDS = [
    "alma",
    "arden",
    "painter",
    "born",
    "1950",
    "bergen",
    "norway",
    "poet",
    "sailor",
    "the",
    "a",
    "was",
    "in",
    "of",
]


@st.composite
def pools(draw):
    "A small random pool of people (random documents and profiles) plus synthetic background people."
    n = draw(st.integers(3, 6))
    people = []
    for i in range(n):
        document = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=12)))
        profile = {"name": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))}
        people.append(Person(f"r{i}", document, profile))
    return people + make_synthetic_people(draw(st.integers(5, 15)), seed=draw(st.integers(0, 5)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    people=pools(),
    k=st.integers(1, 4),
    search=st.sampled_from(["greedy", "approximate"]),
    model=st.sampled_from(["bm25", "word_overlap"]),
)
def test_certificates_and_texts_at_every_k_hold(people, k, search, model):
    reidentifier = BM25Reidentifier(people) if model == "bm25" else WordOverlapReidentifier(people, seed=1)
    results = deidentify(people[:3], reidentifier, k, search=search)
    for result in results:
        person = result.certificate.person_id
        assert result.certificate.rank == reidentifier.ranks(result.text, person)  # the certificate is a fresh scoring
        for j in range(1, k + 1):
            if result.certificate.goal_met:
                assert reidentifier.ranks(result.text_at_k(j), person) >= j  # every K the API hands out holds
        for trajectory in result.trajectories:
            masked = [set(trajectory.masked_positions_at_step(s)) for s in range(len(trajectory) + 1)]
            assert all(a <= b for a, b in zip(masked, masked[1:]))  # masks never decrease
    originals = [p.document for p in people[:3]]
    assert 0.0 <= percent_masked([r.text for r in results], originals) <= 100.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=5))
def test_percent_masked_is_a_percentage(counts):
    "Any masking of any original: between 0 and 100, masks already in the original not counted."
    masked, originals = [], []
    for n_words, n_masked in counts:
        n_words = max(n_words, 1)
        original = " ".join(["<mask>"] + [f"w{i}" for i in range(n_words)])  # one mask already there
        masked.append(
            " ".join(
                ["<mask>"] * (1 + min(n_masked, n_words)) + [f"w{i}" for i in range(min(n_masked, n_words), n_words)]
            )
        )
        originals.append(original)
    assert 0.0 <= percent_masked(masked, originals) <= 100.0
    assert np.isclose(percent_masked(originals, originals), 0.0)

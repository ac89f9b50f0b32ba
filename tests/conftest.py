"""Fixtures several test files share: a small synthetic pool and the word-overlap test double over it."""

import pytest

from deid_nb.people import make_synthetic_people
from deid_nb.reidentifier import WordOverlapReidentifier


@pytest.fixture(scope="module")
def people():
    "30 synthetic people (a test file may define its own `people`, which then wins)."
    return make_synthetic_people(30, seed=1)


@pytest.fixture(scope="module")
def toy(people):
    "The word-overlap test double over `people`."
    return WordOverlapReidentifier(people, seed=1)

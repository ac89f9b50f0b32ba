"Hand-made examples for deid_nb.baselines and deid_nb.metrics (the notebooks 08 and 09 hold the full tests)."

import numpy as np
import pytest

from deid_nb.baselines import (
    ALL_ENTITY_TYPES,
    idf_redact,
    idf_table_aware_redact,
    lexical_redact,
    named_entity_redact,
    redact_people,
)
from deid_nb.data import Person
from deid_nb.masking import idf_weights
from deid_nb.metrics import (
    ensemble_reidentified,
    information_loss,
    percent_masked,
    reidentification_ranks,
    reidentification_summary,
)
from deid_nb.reidentifier import Reidentifier

IDF = idf_weights(["alma is the painter", "boris is the painter", "chidi is the poet", "dana is the poet"])


def test_lexical_masks_profile_words():
    profile = {"name": "alma arden", "birth_place": "bergen, norway", "occupation": "painter"}
    assert (
        lexical_redact("Alma Arden of Bergen is a Norwegian painter", profile)
        == "<mask> <mask> of <mask> is a Norwegian <mask>"
    )


def test_idf_and_table_aware_order():
    assert idf_redact("Alma is the painter", IDF, 0.25) == "<mask> is the painter"
    assert idf_table_aware_redact("Alma is the painter", {"occupation": "painter"}, IDF, 0.25) == "Alma is the <mask>"


def test_named_entity_sentence():
    sentence = "Alma Arden was born in Bergen, Norway, and studied at the University of Oslo in 1970."
    assert (
        named_entity_redact(sentence)
        == "<mask> <mask> was born in <mask>, <mask>, and studied at <mask> <mask> <mask> <mask> in 1970."
    )
    assert named_entity_redact(sentence, ALL_ENTITY_TYPES).endswith("in <mask>.")


def test_redact_people_skips_bad_records():
    people = [
        Person("a", "Alma paints", {"name": "alma"}),
        Person("b", "", {}),
        Person("c", "Boris sails", {"name": "boris"}),
    ]
    assert redact_people(people, "lexical", progress=False) == {"a": "<mask> paints", "c": "<mask> sails"}


@pytest.mark.parametrize("module,tool", [("presidio_analyzer", "presidio"), ("scrubadub", "scrubadub")])
def test_peer_tools_mask_emails(module, tool):
    pytest.importorskip(module, reason=f"{module} not installed (pip install deid_nb[peers])")
    masked = redact_people([Person("a", "Write to alma@arden.no please.", {})], tool, progress=False)["a"]
    assert "<mask>@<mask>.<mask>" in masked


def test_utility_metrics_by_hand():
    masked, originals = (
        ["<mask> <mask> is a painter", "<mask> is a poet"],
        ["alma arden is a painter", "boris is a poet"],
    )
    assert percent_masked(masked, originals) == pytest.approx(32.5)
    assert percent_masked(masked, originals, average="corpus") == pytest.approx(100 / 3)
    assert information_loss(masked, originals) == pytest.approx(1 - 35 / 41)  # zlib level 9, "\n"-joined


class _Fixed(Reidentifier):
    def __init__(self, name, rows):
        self.name, self.rows = name, rows
        super().__init__(["p0", "p1", "p2"])

    def score_batch(self, documents):
        return np.array([self.rows[d] for d in documents], dtype=float)


def test_ensemble_any_of():
    a = _Fixed("a", {"d0": [0.9, 0.1, 0.0], "d1": [0.8, 0.5, 0.1], "d2": [0.1, 0.9, 0.3]})
    b = _Fixed("b", {"d0": [0.5, 0.6, 0.7], "d1": [0.1, 0.9, 0.2], "d2": [0.4, 0.4, 0.4]})
    ranks = reidentification_ranks(["d0", "d1", "d2"], ["p0", "p1", "p2"], [a, b])
    assert ensemble_reidentified(ranks).tolist() == [True, True, False]
    summary = reidentification_summary(ranks)
    assert summary["ensemble_reid"] == pytest.approx(200 / 3)
    assert summary["a_top1"] == pytest.approx(100 / 3) and summary["b_median_rank"] == 2.0

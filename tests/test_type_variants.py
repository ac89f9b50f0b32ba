"""Type masking is document-wide and variant-proof (issue 32, item 2): masking the word type "smith" masks every unit that
reads "Smith" — in any case, in fullwidth or lookalike letters, across invisible characters — and every unit that has it as
a part ("#JohnSmith", "Smith_Jones", "Smith2020"); nothing changes on ASCII text (units, word types, search trajectories)."""

import re

import pytest
from hypothesis import given, settings, strategies as st

from deid_nb.core import MASK_ALIASES
from deid_nb.data import DataError, dataset_path, load_wikibio_2000, make_synthetic_people
from deid_nb.masking import (
    INVISIBLE_CHARACTERS,
    mask_word_types,
    mask_words,
    spread_type_masks,
    text_units,
    type_groups,
    type_key,
    word_parts,
)
from deid_nb.nn_deid.approximate_search import approximate_search, approximate_search_many
from deid_nb.nn_deid.search import Units, candidate_maskings, greedy_search
from deid_nb.reidentifier import WordOverlapReidentifier

# The units before invisible characters joined words: masks, then `\b\w+\b` words.
WORDS_AND_MASKS = re.compile("|".join(re.escape(m) for m in MASK_ALIASES) + r"|\b\w+\b")


@pytest.fixture(scope="module")
def wikibio():
    try:
        dataset_path("wikibio_2000", download=False)
    except DataError as error:
        pytest.skip(f"WikiBio-2000 not available here: {error}")
    return list(load_wikibio_2000())


# ---------------------------------------------------------------- one test per variant: masking "Smith" masks it
VARIANTS = {  # variant as written in the text: the text after spreading a mask of "Smith"
    "possessive": ("Smith's", "<mask>'s"),
    "possessive, typographic apostrophe": ("Smith\u2019s", "<mask>\u2019s"),
    "hyphenation": ("Smith-Jones", "<mask>-Jones"),
    "hashtag": ("#JohnSmith", "#<mask>"),
    "camelCase": ("JohnSmithFoundation", "<mask>"),
    "acronym run": ("JOHNSmith", "<mask>"),
    "underscore": ("Smith_Jones", "<mask>"),
    "digits": ("Smith2020", "<mask>"),
    "broken by an underscore (a run of parts)": ("Smi_th", "<mask>"),
    "upper case": ("SMITH", "<mask>"),
    "lookalike: Cyrillic capital DZE": ("\u0405mith", "<mask>"),
    "lookalike: Cyrillic small i": ("Sm\u0456th", "<mask>"),
    "lookalike: Greek iota": ("Sm\u03b9th", "<mask>"),
    "fullwidth": ("\uff33\uff4d\uff49\uff54\uff48", "<mask>"),
    "zero-width space": ("Smi\u200bth", "<mask>"),
    "zero-width joiner": ("Sm\u200dith", "<mask>"),
    "word joiner": ("Smit\u2060h", "<mask>"),
    "soft hyphen": ("Smi\u00adth", "<mask>"),
    "several at once": ("#\uff2a\uff4f\uff48\uff4e\u0405mi\u00adth_2020", "#<mask>"),
}


@pytest.mark.parametrize("variant, expected", VARIANTS.values(), ids=VARIANTS.keys())
def test_masking_smith_masks_the_variant(variant, expected):
    original = f"Smith wrote it. Later {variant} came."
    masked = original.replace("Smith", "<mask>", 1)
    assert spread_type_masks(original, masked) == f"<mask> wrote it. Later {expected} came."


WHOLE_UNIT_VARIANTS = [v for v, _ in VARIANTS.values() if [type_key(u) for u in text_units(v)] == ["smith"]]


@pytest.mark.parametrize("variant", WHOLE_UNIT_VARIANTS)
def test_a_variant_masked_first_masks_plain_smith(variant):
    "The other direction, for variants that are a whole unit: masking the variant masks 'Smith'."
    original = f"{variant} wrote it. Later Smith came."
    assert spread_type_masks(original, original.replace(variant, "<mask>", 1)) == "<mask> wrote it. Later <mask> came."


NOT_SMITH = ["blacksmith", "Smiths", "Smithson", "Goldsmith", "smithy", "Smyth", "Sm1th", "SmithsonJones"]


@pytest.mark.parametrize("word", NOT_SMITH)
def test_parts_are_sub_tokens_not_substrings(word):
    "'Smiths' is a word type of its own (a plural or an apostrophe-less possessive): the search masks it if it identifies."
    original = f"Smith met {word}."
    assert spread_type_masks(original, f"<mask> met {word}.") == f"<mask> met {word}."


def test_a_masked_possessive_s_masks_units_s_not_letters():
    original = "Smith's son's Bs2 and s"
    assert spread_type_masks(original, "Smith'<mask> son's Bs2 and s") == "Smith'<mask> son'<mask> Bs2 and <mask>"


def test_spreading_is_document_wide_and_keeps_mask_spellings():
    original = "[MASK] Smith. " + "Filler text. " * 200 + "#SmithFamily and smith"
    spread = spread_type_masks(original, original.replace("Smith.", "<mask>.", 1))
    assert spread == "[MASK] <mask>. " + "Filler text. " * 200 + "#<mask> and <mask>"


def test_spreading_needs_a_masking_of_the_same_text():
    with pytest.raises(ValueError, match="not a masking"):
        spread_type_masks("Smith met Jones", "<mask> Jones")


def test_deny_list_masks_words_their_variants_and_containing_units():
    text = "Alma Arden (#AlmaArden, \uff21\uff32\uff24\uff25\uff2e, Ar\u200bden) painted Ardennes."
    assert mask_words(text, ["arden"]) == "Alma <mask> (#<mask>, <mask>, <mask>) painted Ardennes."
    assert mask_words(text, ["Alma Arden"]) == "<mask> <mask> (#<mask>, <mask>, <mask>) painted Ardennes."


def test_mask_word_types_uses_the_type_key():
    assert (
        mask_word_types("Smith, \u0405MITH, Smi\u00adth and Smiths.", ["smith"]) == "<mask>, <mask>, <mask> and Smiths."
    )


def test_word_parts():
    assert word_parts("#JohnSmith") == ["john", "smith"]  # "#" is not in the unit; word_parts is given units
    assert word_parts("Smith_Jones2020") == ["smith", "jones", "2020"]
    assert word_parts("blacksmith") == ["blacksmith"]


# ---------------------------------------------------------------- units: joined across invisible characters, else unchanged
SYNTHETIC = [
    "Ruse (1759) was a [MASK]; <mask> farmed.",
    "<mask>s a<MASK>b [mask][MASK]",
    "x_y 1759-60 O'Neil's ... --",
    "Smith\u2019s #JohnSmith Smith2020 \uff33\uff4d\uff49\uff54\uff48 \u0405mith",
    "",
    "   ",
    "_",
    "__init__ a_ _b",
    "caf\u00e9 na\u0308ive \u00bd \u2460 \u0661\u0662",
]


@pytest.mark.parametrize("text", SYNTHETIC)
def test_units_are_unchanged_without_invisible_characters(text):
    assert text_units(text) == WORDS_AND_MASKS.findall(text)
    assert Units.of(text).text() == text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "Smith",
                "_",
                "1",
                " ",
                "'",
                "-",
                "#",
                "<mask>",
                "[MASK]",
                "<",
                ">",
                "\u00e9",
                "\u0405",
                "\uff33",
                "\u2019",
                "\n",
            ]
        ),
        max_size=20,
    )
)
def test_units_are_unchanged_without_invisible_characters_property(pieces):
    text = "".join(pieces)
    assert text_units(text) == WORDS_AND_MASKS.findall(text)


@pytest.mark.parametrize("invisible", list(INVISIBLE_CHARACTERS))
def test_invisible_characters_join_a_word(invisible):
    text = f"Smi{invisible}th and {invisible}Jones{invisible}, <mask>{invisible}x"
    assert text_units(text) == [f"Smi{invisible}th", "and", "Jones", "<mask>", "x"]
    assert Units.of(text).text([0]) == text.replace(f"Smi{invisible}th", "<mask>")


def test_wikibio_units_are_unchanged(wikibio):
    for person in wikibio:
        assert text_units(person.document) == WORDS_AND_MASKS.findall(person.document), person.person_id


def test_wikibio_ascii_keys_are_lower_and_type_grouping_is_unchanged(wikibio):
    for person in wikibio:
        units = text_units(person.document)
        assert all(type_key(u) == u.lower() for u in units if u.isascii()), person.person_id
        by_lower: dict[str, list[int]] = {}
        for i, u in enumerate(units):
            by_lower.setdefault(u.lower(), []).append(i)
        assert list(type_groups(units).values()) == [tuple(group) for group in by_lower.values()], person.person_id


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=30))
def test_type_key_is_lower_on_ascii(word):
    assert type_key(word) == word.lower()


# ---------------------------------------------------------------- the search: one type per variant, and an allow-list
def test_search_masks_all_variants_of_a_type_in_one_step():
    units = Units.of("Smith met \uff33\uff4d\uff49\uff54\uff48, \u0405mith and Smi\u200bth.")
    assert candidate_maskings(units) == [("smith", (0, 2, 3, 5)), ("met", (1,)), ("and", (4,))]


def _fullwidth(word: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in word)


@pytest.mark.parametrize("search", [greedy_search, approximate_search])
def test_kept_words_are_never_masked(people, toy, search):
    "An allow-list, matched by type key (here written in capitals and in fullwidth letters): the search masks all else."
    person = people[0]
    first, surname = person.document.split()[:2]
    trajectory = search(person.document, person.person_id, toy, keep=[first.upper(), _fullwidth(surname)])  # no max_k
    kept = {first.lower(), surname.lower()}
    assert not any(step.word in kept for step in trajectory.steps)
    left = [w for w in Units.of(trajectory.masked_text_at_step(len(trajectory))).words if w not in MASK_ALIASES]
    assert left == [w for w in Units.of(person.document).words if w.lower() in kept] and left


def test_keep_passes_through_the_many_document_search(people, toy):
    documents, ids, keep = [p.document for p in people[:4]], [p.person_id for p in people[:4]], ["born", "is"]
    for trajectory in approximate_search_many(documents, ids, toy, max_k=5, top_m=2, keep=keep):
        kept_before = [w for w in Units.of(trajectory.document).words if w in keep]
        assert kept_before and [w for w in Units.of(trajectory.masked_text_at_k(5)).words if w in keep] == kept_before


def test_wikibio_search_candidates_group_as_lower_did(wikibio):
    "The search's candidates on WikiBio-2000: the same positions per type as grouping by `.lower()`, labels too on ASCII."
    for person in wikibio:
        units = Units.of(person.document)
        by_lower: dict[str, list[int]] = {}
        for i, word in enumerate(units.words):
            if not units.is_mask(i):
                by_lower.setdefault(word.lower(), []).append(i)
        candidates = candidate_maskings(units)
        assert [positions for _, positions in candidates] == [tuple(group) for group in by_lower.values()]
        assert all(word == lower for (word, _), lower in zip(candidates, by_lower) if lower.isascii())

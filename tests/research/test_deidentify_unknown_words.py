"""The recall policy for recogniser text (`unknown`): a word no English list knows is a
name wherever it stands, spelled-out letters are redacted, and ordinary words (modern ones,
inflected ones, compounds) stay. Real pinned gazetteers and word frequencies, the real spaCy
pipeline, sentences written for this test (not the benchmark's)."""

from __future__ import annotations

import pytest

from companion.research import gazetteer, unknown
from companion.research.deidentify import redactor_for
from companion.research.ner import NerUnavailable, load_pipeline


@pytest.fixture(scope="module")
def redactor():
    return redactor_for(["Zelda"], load_pipeline())


@pytest.fixture(scope="module")
def lists():
    return gazetteer.load_gazetteer(), unknown.load_frequencies()


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        # no cue at all: only "no English word" says these are names
        ("siobhra wants to borrow the ladder again", "siobhra"),
        ("tadeusz fixed the gate before the rain came", "tadeusz"),
        ("we walked all the way round inchmurrin in the drizzle", "inchmurrin"),
        ("went for a curry with anirudh and his wife after work", "anirudh"),
    ],
)
def test_a_word_no_list_knows_is_redacted_without_a_cue(redactor, text, gone):
    out = redactor.redact(text)
    assert gone not in out and out.count("[") >= 1, out


@pytest.mark.parametrize(
    "text",
    [
        "the coworker i sit beside grabbed tacos from the food truck at lunchtime",
        "the restroom was out of order so we overslept and missed the bus",
        "she slammed the door and we were stunned by the funniest thing",
        "i checked my paycheck online before the shopping trip",
    ],
)
def test_modern_inflected_and_compound_words_stay(redactor, text):
    assert redactor.redact(text) == text


def test_english_knows_inflections_prefixes_compounds_and_frequent_words(lists):
    gaz, freq = lists
    for word in ("stunned", "funniest", "coworker", "paycheck", "internet", "shopping"):
        assert unknown.english(word, gaz, freq), word
    for word in ("wojtasz", "niamhy", "kerrigal", "ptolmey"):
        assert not unknown.english(word, gaz, freq), word


def test_a_rare_english_word_that_is_a_name_is_redacted_a_common_one_stays(lists):
    gaz, freq = lists
    rare = "we buried old bramble under the apple tree"  # a census surname, rare as a word
    common = "we buried the old dog under the apple tree"
    spans = unknown.unknown_names(rare, gaz, freq, lambda w: False)
    assert [rare[s.start : s.end] for s in spans] == ["bramble"]
    assert unknown.unknown_names(common, gaz, freq, lambda w: False) == []


def test_spelled_letters_and_digits_are_one_span_initials_join_a_name(redactor):
    text = "it is spelled q u i l l o n and the number is b x k four two one"
    out = redactor.redact(text)
    assert "q u i" not in out and "b x" not in out and "l o n" not in out, out
    assert redactor.redact("i was at a b and b in york") != "i was at [PERSON] in york"
    named = "the card just says r t quillon on the front"
    assert "r t" not in redactor.redact(named), redactor.redact(named)


def test_spoken_email_after_a_name_that_is_its_first_part(redactor):
    text = "you can mail odhran at odhran dot keaveney at protonmail dot com"
    out = redactor.redact(text)
    assert "keaveney" not in out and "protonmail" not in out and "odhran" not in out, out


def test_typed_text_sentence_start_and_rare_capitalised_words(redactor):
    out = redactor.redact("Siobhra and I went to the shops. We met Clovis, of all people.")
    assert "Siobhra" not in out and "Clovis" not in out, out
    assert redactor.redact("Yesterday I bought a new kettle.") == "Yesterday I bought a new kettle."


def test_changed_word_frequencies_are_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(unknown, "FREQUENCIES_SHA256", "0" * 64)
    unknown.load_frequencies.cache_clear()
    try:
        with pytest.raises(NerUnavailable, match=r"small_en.msgpack.gz: word frequencies"):
            unknown.load_frequencies()
    finally:
        unknown.load_frequencies.cache_clear()


def test_development_set_5_as_recognised_keeps_its_recall():
    """A guard on the round's development set (not a held-out number): the recogniser half
    of set 5 stays at or above 93 % with every contact detail caught."""
    from tests.bench.bench_pii import participant, recall, set3, set_path

    _, spoken = set3(set_path(5))
    redactor = redactor_for([participant(set_path(5))], load_pipeline())
    per_type, missed = recall(redactor, False, spoken)
    hits, total = sum(h for h, _ in per_type.values()), sum(n for _, n in per_type.values())
    assert hits / total >= 0.93, missed
    assert all(per_type[k][0] == per_type[k][1] for k in ("phone_spoken", "email_spoken"))

"""De-identification by a name's place in the sentence: how a participant gives their own
name, names whose word is also ordinary English, possessives, spoken e-mails, ids and ages.
The real spaCy pipeline and pinned gazetteers; sentences written for this test (not the
benchmark's sets)."""

from __future__ import annotations

import pytest

from companion.research.deidentify import Redactor, redactor_for
from companion.research.ner import load_pipeline


@pytest.fixture()
def redactor() -> Redactor:
    return redactor_for(["Ottoline"], load_pipeline())  # a fresh export: nothing learned yet


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        # the participant's own name, given in the ways people give it
        ("hello it's ottoline fenwick here", "fenwick"),
        ("fenwick speaking who is this", "fenwick"),
        ("my surname is fenwick like the shop", "fenwick"),
        ("my maiden name was trelawney", "trelawney"),
        ("everyone calls me lottie at church", "lottie"),
        ("Hello, Ottoline Fenwick speaking.", "Fenwick"),
        ("My maiden name was Trelawney.", "Trelawney"),
        # names that are ordinary words, known by the words around them
        ("my stepdaughter honey is coming at easter", "honey"),
        ("her husband marley lives in the next village", "marley"),
        ("the parrot is called biscuit and he swears", "biscuit"),
        ("we named her clementine after my aunt", "clementine"),
        ("the budgie crackers escaped through the window", "crackers"),
        ("i still think of oyelaran from the factory", "oyelaran"),
        ("quintus from the bowls club gave me a lift", "quintus"),
        ("you can ring odalys any time", "odalys"),
        ("we ate at kowalczyk's cafe on the front", "kowalczyk"),
        ("we went round to the fairbairns' for new year", "fairbairns"),
        # places nobody listed, after a verb of going
        ("we flew to fuerteventura last spring", "fuerteventura"),
        ("the house on wisteria crescent had a pear tree", "wisteria"),
        # contact details as they are said
        ("my email is o fenwick seventy at hotmail dot co dot uk", "seventy"),
        ("write to ottie dash fen at btinternet dot com", "ottie"),
        ("or just ottoline fenwick at gmail", "gmail"),
        ("it's oh one two one double four nine six triple seven", "triple"),
        ("the claim number is k l four four one nine two", "four four"),
        ("mossop is my surname", "mossop"),
        ("that's m o s s o p", "m o s s o p"),
        ("ring me on plus four four seven seven double oh nine hundred one two", "plus"),
        ("we had a week on the isle of man", "isle of man"),
        ("we used to go up to the peak district", "peak"),
        ("i went shopping with ffion on saturday", "ffion"),
        ("we lived at rose cottage near the church", "rose cottage"),
        ("we lived at twelve a mill road for years", "mill"),
        # dates and ages as they are said
        ("she's nearly ninety and still drives", "ninety"),
        ("we married in june and moved in nineteen sixty one", "sixty one"),
        ("Little Isolde is seven and reads better than me.", "seven"),
    ],
)
def test_found(redactor, text, gone):
    redacted = redactor.redact(text)
    assert redacted is not None and gone not in redacted, redacted


@pytest.mark.parametrize(
    "text",
    [
        "my friend stole my laptop as a joke",
        "a bat flew at me in the garden",
        "it is lovely here in the mornings",
        "this is great here",
        "i was one of the lucky ones",
        "i want to download the photos",
        "we walked down the lane to the pub",
        "in every way it was a good year",
        "my phone bill went up again",
        "my youngest daughter made me a cake",
        "my mum's birthday and the dog's birthday are on the same day",
        "she was diagnosed with cancer last year",
        "we climbed to the mountain top in forty five minutes",
    ],
)
def test_ordinary_words_stay(redactor, text):
    assert redactor.redact(text) == text


def test_a_surname_said_once_is_redacted_later_in_the_same_export(redactor):
    # a surname that is an English word too ("finch"): no list makes it a name on its own
    later = "they always spell finch wrong"
    first, spans = redactor.spans_many(["my name is ottoline finch and i live alone", later])
    assert first and any(s.label == "PERSON" and "finch" in later[s.start : s.end] for s in spans)
    fresh = redactor_for(["Ottoline"], load_pipeline())  # another export has not heard it
    assert fresh.redact("they always spell finch wrong") == "they always spell finch wrong"

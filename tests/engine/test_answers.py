"""Answer parsing: a stored value is what the participant clearly meant, or nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.engine.answers import (
    NUMBER_NAMES,
    Answer,
    ends_story,
    is_done,
    parse_free_text,
    parse_scale,
    parse_yes_no,
)
from companion.engine.protocol import load_protocol

AGREE = {
    1: "strongly disagree",
    2: "disagree",
    3: "neither agree nor disagree",
    4: "agree",
    5: "strongly agree",
}
MOOD = {1: "very unpleasant", 2: "unpleasant", 3: "neutral", 4: "pleasant", 5: "very pleasant"}
ENDS = {1: "not at all", 5: "completely"}

V = lambda n: Answer("value", n)  # noqa: E731
UNCLEAR = Answer("unclear")
SKIP = Answer("skip")
REPEAT = Answer("repeat")
# The shipped protocol's [answers]: what every study without its own words parses with.
W = load_protocol().answer_words

SCALE_CASES = [
    # plain numbers
    ("4", AGREE, V(4)),
    ("four", AGREE, V(4)),
    ("Four.", AGREE, V(4)),
    ("  5  ", AGREE, V(5)),
    ("1", AGREE, V(1)),
    ("one", AGREE, V(1)),
    ("I'd say four", AGREE, V(4)),
    ("I’d say four", AGREE, V(4)),  # typographic apostrophe
    ("a four", AGREE, V(4)),
    ("um, a three", AGREE, V(3)),
    ("three please", AGREE, V(3)),
    ("four out of five", AGREE, V(4)),
    ("4 out of 5", AGREE, V(4)),
    ("two of five", AGREE, V(2)),
    ("yeah, five", AGREE, V(5)),
    ("okay so two", AGREE, V(2)),
    ("definitely two", AGREE, V(2)),
    ("I would give it a four", AGREE, V(4)),
    ("my answer is three", AGREE, V(3)),
    ("FIVE!", AGREE, V(5)),
    # anchor labels
    ("strongly agree", AGREE, V(5)),
    ("agree", AGREE, V(4)),
    ("I agree", AGREE, V(4)),
    ("disagree", AGREE, V(2)),
    ("strongly disagree", AGREE, V(1)),
    ("neither agree nor disagree", AGREE, V(3)),
    ("five, strongly agree", AGREE, V(5)),
    ("4 - agree", AGREE, V(4)),
    ("very pleasant", MOOD, V(5)),
    ("pleasant", MOOD, V(4)),
    ("neutral", MOOD, V(3)),
    ("not at all", ENDS, V(1)),
    ("completely", ENDS, V(5)),
    ("one, not at all", ENDS, V(1)),
    # commands
    ("skip", AGREE, SKIP),
    ("skip that one", AGREE, SKIP),
    ("Pass.", AGREE, SKIP),
    ("I'd rather not say", AGREE, SKIP),
    ("repeat that", AGREE, REPEAT),
    ("Repeat that please", AGREE, REPEAT),
    ("sorry, could you repeat that?", AGREE, REPEAT),
    ("say that again", AGREE, REPEAT),
    ("what?", AGREE, REPEAT),
    ("pardon", AGREE, REPEAT),
    # unclear: never guess
    ("", AGREE, UNCLEAR),
    ("   ", AGREE, UNCLEAR),
    ("three or four", AGREE, UNCLEAR),
    ("between three and four", AGREE, UNCLEAR),
    ("not five", AGREE, UNCLEAR),
    ("not really five", AGREE, UNCLEAR),
    ("fivefold", AGREE, UNCLEAR),
    ("4th", AGREE, UNCLEAR),
    ("fourth", AGREE, UNCLEAR),
    ("4.5", AGREE, UNCLEAR),
    ("three and a half", AGREE, UNCLEAR),
    ("six", AGREE, UNCLEAR),
    ("0", AGREE, UNCLEAR),
    ("10", AGREE, UNCLEAR),
    ("44", AGREE, UNCLEAR),
    ("-3", AGREE, UNCLEAR),  # a negative number, not 3
    ("four out of ten", AGREE, UNCLEAR),
    ("four strongly agree", AGREE, UNCLEAR),
    ("agree, two", AGREE, UNCLEAR),
    ("somewhat agree", AGREE, UNCLEAR),
    ("I don't agree", AGREE, UNCLEAR),
    ("not agree", AGREE, UNCLEAR),
    ("agree and disagree", AGREE, UNCLEAR),
    ("maybe four", AGREE, UNCLEAR),
    ("four because it was fun", AGREE, UNCLEAR),
    ("almost five", AGREE, UNCLEAR),
    ("more than three", AGREE, UNCLEAR),
    ("the first one", AGREE, UNCLEAR),
    ("that one", AGREE, UNCLEAR),
    ("for", AGREE, UNCLEAR),  # homophone of four in speech, but not a number in text
    ("skip four", AGREE, UNCLEAR),
    ("asdf qwerty", AGREE, UNCLEAR),
    ("[noise]", AGREE, UNCLEAR),
    ("very", MOOD, UNCLEAR),
    ("not pleasant", MOOD, UNCLEAR),
    ("unpleasant pleasant", MOOD, UNCLEAR),
    # accepted because unambiguous (documented in docs/protocol.md)
    ("4!", AGREE, V(4)),
    ("FOUR", AGREE, V(4)),
    ("a 4", AGREE, V(4)),
    ("4/5", AGREE, V(4)),
    ("4 / 5", AGREE, V(4)),
    ("4 (agree)", AGREE, V(4)),
]

# Replies that must never store a value (issue 11: each of these once stored one).
REFUSED = [
    # negatives and signs
    "-1",
    "\u22121",
    "-4",
    "- 4",
    "minus four",
    "negative two",
    "+4",
    "~4",
    "4+",
    "±3",
    # fractions and halves
    "4\u00bd",
    "3\u00bd",
    "\u00bd",
    "4.5",
    ".5",
    "4,5",
    "three and a half",
    "half",
    "4/10",
    "3/4",
    "4/4",
    # comparisons and ranges
    ">3",
    "<5",
    "\u22654",
    "\u22642",
    "=4",
    "3-4",
    "3 to 4",
    "3 or 4",
    "between 3 and 4",
    "more than three",
    "less than 5",
    "at least 4",
    "4 at most",
    # question marks and hedges
    "4?",
    "four?",
    "probably 4",
    "I guess 2",
    "I think four",
    "around 4",
    "about four",
    "roughly 3",
    "maybe 4",
    "perhaps five",
    "4 or so",
    "like a 4",
    "kind of a 3",
    "4ish",
    "almost 5",
    "nearly 2",
    # outside the scale, other numerals, digits and words that disagree
    "6",
    "0",
    "10",
    "100",
    "four 5",
    "4 four 4",
    "\uff14",
    "\u2074",
    "\u0664",
    "IV",
    "four, strongly disagree",
    "5 disagree",
    # percent, emphasis signs that change meaning, code
    "40%",
    "4%",
    "4*",
    "#4",
    "4\n5",
    "{4}",
    "[4]",
    "<b>4</b>",
]


@pytest.mark.parametrize("text", REFUSED)
def test_refused_forms_store_nothing(text: str) -> None:
    assert parse_scale(text, 1, 5, AGREE, words=W).kind == "unclear", text


@pytest.mark.parametrize(("text", "anchors", "expected"), SCALE_CASES)
def test_scale_answers(text: str, anchors: dict[int, str], expected: Answer) -> None:
    assert parse_scale(text, 1, 5, anchors, words=W) == expected


def test_table_is_large_and_adversarial() -> None:
    assert len(SCALE_CASES) >= 60
    assert sum(1 for _, _, e in SCALE_CASES if e == UNCLEAR) >= 25


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", V(1)),
        ("Yeah.", V(1)),
        ("I think yes", UNCLEAR),  # a hedge
        ("yes?", UNCLEAR),
        ("Yes!", V(1)),
        ("of course", V(1)),
        ("no", V(0)),
        ("nope", V(0)),
        ("not really", V(0)),
        ("yes and no", UNCLEAR),
        ("no yes", UNCLEAR),
        ("maybe", UNCLEAR),
        ("", UNCLEAR),
        ("skip", SKIP),
        ("repeat that", REPEAT),
    ],
)
def test_yes_no(text: str, expected: Answer) -> None:
    assert parse_yes_no(text, words=W) == expected


def test_free_text() -> None:
    calm = Answer("value", "I felt calm today.")
    assert parse_free_text("  I felt calm today. ", words=W) == calm
    assert parse_free_text("", words=W) == UNCLEAR
    assert parse_free_text("skip", words=W) == SKIP


@pytest.mark.parametrize(
    ("text", "done"),
    [("That's all", True), ("no", True), ("I'm done.", True), ("That's all, really.", True),
     ("nothing else", True), ("It was my birthday and nobody came", False), ("", False)],
)  # fmt: skip
def test_is_done(text: str, done: bool) -> None:
    assert is_done(text, words=W) is done


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        # a story that ends the way people end one
        ("The ferry was cancelled so we drove all the way round, and that's all.", True),
        ("we got the keys on friday anyway thats about it", True),
        ("My aunt taught me to knit that winter. That's my story really.", True),
        ("the cat came back on her own in the end so yeah that's it", True),
        ("He fixed the fence for nothing. That's pretty much it, I guess.", True),
        ("We sat on the step until the rain stopped. The end.", True),
        ("i think that is all", True),
        ("That's all.", True),
        # the same words going on: the story is not over
        ("That's all I could think about for weeks.", False),
        ("thats it i said and walked out of the meeting before anyone could answer", False),
        ("the end of the road was flooded", False),
        ("She said that's all she wanted, a quiet birthday, and then the band arrived.", False),
        ("It was my birthday and nobody came", False),
        ("I was done with it", False),
        ("The roof leaked all winter but the insurance paid up in the end", False),
        ("she cried because i'm done", False),
        ("The builders left at the end", False),
        ("", False),
    ],
)  # fmt: skip
def test_ends_story(text: str, ends: bool) -> None:
    assert ends_story(text, words=W) is ends


def test_scale_range_respected() -> None:
    assert parse_scale("seven", 0, 10, words=W) == V(7)
    assert parse_scale("zero", 0, 10, words=W) == V(0)
    assert parse_scale("seven", 1, 5, words=W) == UNCLEAR


# ---- property: a parsed value is always correct or NULL -------------------------------

SAFE_FILLERS = ["um", "I'd say", "a", "okay", "yeah", "please", "my answer is", "definitely"]
DISTRACTORS = ["not", "or {other}", "{other}", "and {other}", "maybe", "almost", "fold",
               "more than", "less than", "half", "th", "because", "no",
               # issue 11 families: hedges, signs, fractions, comparisons, questions
               "probably", "I guess", "I think", "around", "-", "\u2212", "\u00bd", ">", "<",
               "?", "or so", "ish", "/{other}", ".5"]  # fmt: skip


def _spoken(value: int, style: int) -> str:
    return [str(value), NUMBER_NAMES[value], AGREE[value]][style]


@settings(max_examples=400, deadline=None)
@given(
    value=st.integers(1, 5),
    style=st.integers(0, 2),
    before=st.lists(st.sampled_from(SAFE_FILLERS), max_size=2),
    after=st.lists(st.sampled_from(SAFE_FILLERS), max_size=2),
    distractor=st.one_of(st.none(), st.sampled_from(DISTRACTORS)),
    other=st.integers(0, 9),
    position=st.booleans(),
    glue=st.sampled_from([" ", ", ", " - ", "... "]),
)
def test_parsed_value_is_correct_or_null(
    value, style, before, after, distractor, other, position, glue
) -> None:
    core = _spoken(value, style)
    words = [*before, core, *after]
    if distractor is not None:
        other_word = NUMBER_NAMES[other] if other != value else NUMBER_NAMES[(value % 5) + 1]
        piece = distractor.format(other=other_word)
        if piece in ("fold", "th", "ish", "?", "\u00bd", ".5") or piece.startswith("/"):
            words[len(before)] = core + piece  # glued suffix: "fourfold", "4th", "4?"
        elif piece in ("-", "\u2212", ">", "<"):
            words[len(before)] = piece + core  # glued prefix: "-4", ">4"
        elif position:
            words.insert(len(before), piece)
        else:
            words.insert(len(before) + 1, piece)
    text = glue.join(words)
    answer = parse_scale(text, 1, 5, AGREE, words=W)
    if distractor is None:
        assert answer == V(value), text  # clean answers are understood
    else:
        assert answer.kind in ("unclear", "value"), text
        if answer.kind == "value":
            assert answer.value == value, text  # never a different value


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_never_crashes_and_stays_in_range(text: str) -> None:
    answer = parse_scale(text, 1, 5, AGREE, words=W)
    if answer.kind == "value":
        assert isinstance(answer.value, int) and 1 <= answer.value <= 5

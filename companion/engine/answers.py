"""Turn a participant's spoken or typed reply into an answer, or refuse to guess.

Pure functions, no I/O. The rule: a parsed value is either what the participant
clearly meant or nothing. Anything unclear, hedged, negated or contradictory is
`UNCLEAR`, so the engine reprompts and finally stores a missing value. A wrong
stored value is the worst bug this product can have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

AnswerKind = Literal["value", "skip", "repeat", "unclear"]


@dataclass(frozen=True)
class Answer:
    kind: AnswerKind
    value: int | str | None = None


UNCLEAR = Answer("unclear")
SKIP = Answer("skip")
REPEAT = Answer("repeat")

NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
NUMBER_NAMES = {n: w for w, n in NUMBER_WORDS.items()}

# Words that carry no meaning around a single answer ("I'd say a four, please").
# Anything not listed here, not a number and not an anchor makes the reply unclear.
FILLERS = frozenset(
    [
        "i",
        "i'd",
        "id",
        "i'll",
        "ill",
        "i'm",
        "im",
        "would",
        "say",
        "said",
        "go",
        "with",
        "a",
        "an",
        "the",
        "it's",
        "its",
        "it",
        "is",
        "um",
        "uh",
        "er",
        "erm",
        "hmm",
        "hm",
        "mm",
        "oh",
        "ah",
        "well",
        "ok",
        "okay",
        "so",
        "number",
        "answer",
        "my",
        "that's",
        "thats",
        "that",
        "just",
        "please",
        "let's",
        "lets",
        "give",
        "rate",
        "rating",
        "score",
        "yeah",
        "yes",
        "yep",
        "definitely",
        "today",
        "right",
        "now",
        "honestly",
        "really",
        "this",
        "time",
        "i'm",
        "would",
        "be",
        "be",
        "pick",
        "choose",
    ]
)

SKIP_PHRASES = frozenset(
    {
        "skip", "skip it", "skip that", "skip this", "skip this one", "skip that one",
        "skip question", "skip the question", "pass", "next", "next question",
        "i'd rather not say", "id rather not say", "rather not say", "prefer not to say",
        "i prefer not to say", "i'd prefer not to say", "no comment", "i don't want to answer",
        "i dont want to answer", "i'd rather not answer", "rather not answer",
    }
)  # fmt: skip
REPEAT_PHRASES = frozenset(
    {
        "repeat", "repeat that", "repeat it", "repeat the question", "repeat question",
        "say that again", "say it again", "again", "what", "pardon", "pardon me", "sorry",
        "come again", "what was that", "what did you say", "can you repeat that",
        "could you repeat that", "can you say that again", "could you say that again",
        "one more time", "huh", "what was the question", "i didn't catch that",
        "i didnt catch that",
    }
)  # fmt: skip
YES_PHRASES = frozenset(
    {"yes", "yeah", "yep", "yup", "sure", "of course", "i did", "i do", "correct", "absolutely",
     "that's right", "that is right", "yes that's right", "right"}
)  # fmt: skip
NO_PHRASES = frozenset(
    {"no", "nope", "nah", "not really", "i didn't", "i didnt", "i don't", "no it isn't",
     "no it's not", "it isn't", "that's wrong", "no that's wrong", "wrong"}
)  # fmt: skip

# Words that make a number uncertain. None is a filler, so the unknown-word rule already refuses
# them; they are listed so the rule is explicit and tested (tests/engine/test_answers.py).
HEDGES = frozenset(
    {
        "probably", "maybe", "perhaps", "think", "guess", "suppose", "around", "about",
        "roughly", "approximately", "almost", "nearly", "like", "kind", "kinda", "sort",
        "sorta", "ish", "or", "so", "between", "minus", "negative", "half", "quarter",
    }
)  # fmt: skip
# The only characters a typed or transcribed rating may contain besides letters and digits:
# anything else (a question mark, a minus or comparison sign, ½, a superscript, a
# fraction slash) may change the meaning, so the reply is unclear rather than guessed.
_ALLOWED = re.compile(r"[A-Za-z0-9'\u2019\s.,!;:()\"-]*")
# A minus sign before a number ("-4", "- 4" first), a dash joining numbers ("3-4"), a
# decimal point with no whole part (".5").
_SIGNED = re.compile(r"^\s*-\s*[0-9]|(^|[^A-Za-z0-9])-[0-9]|[0-9]\s*-\s*[0-9]|(^|[^0-9])\.[0-9]")
# "4/5": a slash only in the scale's own "value / top" form.
_OUT_OF = re.compile(r"\b([0-9]{1,2})\s*/\s*([0-9]{1,2})\b")

PRONOUN_BEFORE_ONE = frozenset({"that", "this", "the", "which", "each", "every", "any", "no"})

_TOKEN = re.compile(r"[a-z0-9']+")


def normalize(text: str) -> list[str]:
    """Lower-case word tokens; punctuation becomes a separator, apostrophes stay.

    "4.5" becomes ["4", "5"] (two numbers: unclear), "fivefold" stays one
    unknown token (unclear), "4th" stays one unknown token (unclear).
    """
    lowered = text.lower().replace("\u2019", "'")
    return [tok.strip("'") for tok in _TOKEN.findall(lowered) if tok.strip("'")]


def _phrase(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


def _strip_please(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in {"please", "um", "uh", "oh", "sorry"}] or tokens


def parse_command(tokens: list[str]) -> Answer | None:
    """Skip and repeat requests, which every question accepts."""
    if not tokens:
        return None
    phrase = _phrase(tokens)
    stripped = _phrase(_strip_please(tokens))
    if phrase in REPEAT_PHRASES or stripped in REPEAT_PHRASES:
        return REPEAT
    if phrase in SKIP_PHRASES or stripped in SKIP_PHRASES:
        return SKIP
    return None


def _number_of(token: str) -> int | None:
    if token.isdigit() and len(token) <= 3:
        return int(token)
    return NUMBER_WORDS.get(token)


def _match_anchors(tokens: list[str], anchors: Mapping[int, str]) -> tuple[list[int], set[int]]:
    """Find anchor phrases, longest first, without overlap. Returns values and used positions."""
    by_length = sorted(
        ((normalize(label), value) for value, label in anchors.items()),
        key=lambda pair: -len(pair[0]),
    )
    used: set[int] = set()
    found: list[int] = []
    for words, value in by_length:
        if not words:
            continue
        n = len(words)
        for start in range(len(tokens) - n + 1):
            span = set(range(start, start + n))
            if tokens[start : start + n] == words and not span & used:
                used |= span
                found.append(value)
    return found, used


def parse_scale(text: str, low: int, high: int, anchors: Mapping[int, str] | None = None) -> Answer:
    """Parse a rating on an integer scale from `low` to `high` (inclusive).

    Accepts one number (digit or word), optionally "out of <high>" or "/<high>", and/or
    anchor labels that agree with it; fillers around it are ignored. Signs, fractions,
    comparisons, question marks and hedges make the reply unclear (docs/protocol.md: "Answers
    are never guessed").
    """
    command = parse_command(normalize(text))
    if command is not None:
        return command
    text = _OUT_OF.sub(lambda m: f"{m[1]} out of {m[2]}", text)
    if not _ALLOWED.fullmatch(text) or _SIGNED.search(text):
        return UNCLEAR
    tokens = normalize(text)
    if not tokens:
        return UNCLEAR

    anchor_values, used = _match_anchors(tokens, anchors or {})
    rest = [tok for i, tok in enumerate(tokens) if i not in used]

    # "four out of five" / "four of five": the second number must be the scale's top.
    numbers: list[int] = []
    i = 0
    while i < len(rest):
        value = _number_of(rest[i])
        if value is not None and rest[i] == "one" and i and rest[i - 1] in PRONOUN_BEFORE_ONE:
            return UNCLEAR  # "that one", "the first one": a pronoun, not the number
        if value is not None:
            tail = rest[i + 1 : i + 4]
            if tail[:2] == ["out", "of"] and len(tail) == 3 and _number_of(tail[2]) is not None:
                if _number_of(tail[2]) != high:
                    return UNCLEAR
                i += 4
            elif tail[:1] == ["of"] and len(tail) >= 2 and _number_of(tail[1]) is not None:
                if _number_of(tail[1]) != high:
                    return UNCLEAR
                i += 3
            else:
                i += 1
            numbers.append(value)
            continue
        if rest[i] not in FILLERS:
            return UNCLEAR  # an unknown word may change the meaning: never guess
        i += 1

    candidates = set(numbers) | set(anchor_values)
    if len(candidates) != 1 or len(numbers) > 1:
        return UNCLEAR
    value = candidates.pop()
    if not low <= value <= high:
        return UNCLEAR
    return Answer("value", value)


def parse_yes_no(text: str) -> Answer:
    """Yes (1) or no (0); anything else (hedged, "I think yes", "yes?") is unclear."""
    tokens = normalize(text)
    command = parse_command(tokens)
    if command is not None:
        return command
    if not _ALLOWED.fullmatch(text):
        return UNCLEAR  # "yes?" is a question, not an answer
    core = [t for t in tokens if t not in {"um", "uh", "oh", "well", "hmm"}]
    phrase = _phrase(core)
    if phrase in YES_PHRASES or (core and all(t in YES_PHRASES for t in core)):
        return Answer("value", 1)
    if phrase in NO_PHRASES or (core and all(t in NO_PHRASES for t in core)):
        return Answer("value", 0)
    return UNCLEAR


def parse_free_text(text: str) -> Answer:
    """Any non-empty reply is the answer, except a bare skip or repeat request."""
    tokens = normalize(text)
    command = parse_command(tokens)
    if command is not None:
        return command
    stripped = text.strip()
    return Answer("value", stripped) if tokens else UNCLEAR


DONE_PHRASES = frozenset(
    {
        "no", "nope", "nah", "that's all", "thats all", "that's it", "thats it", "i'm done",
        "im done", "done", "nothing else", "nothing more", "no that's all", "no thats all",
        "no that's it", "no thats it", "not really", "that is all", "that's everything",
        "thats everything", "i'm finished", "im finished", "finished", "no more",
        "no i'm done", "no im done", "all", "that's about it", "thats about it",
    }
)  # fmt: skip


def is_done(text: str) -> bool:
    """Did the participant say they have nothing more to add to their story?"""
    ignored = {"um", "uh", "well", "oh", "okay", "ok", "really", "i", "think", "guess", "so"}
    tokens = [t for t in normalize(text) if t not in ignored]
    return _phrase(tokens) in DONE_PHRASES


# How people end a story they have told ("... and that's about it"): said last, after the
# story itself. Written without apostrophes: a recogniser often drops them.
CLOSINGS = frozenset(
    {
        "thats all", "thats it", "thats about it", "thats about all", "thats pretty much it",
        "thats pretty much all", "thats everything", "thats my story", "thats the story",
        "thats the whole story", "thats all there is", "thats all there is to it",
        "thats all i have", "thats all ive got", "thats all i wanted to say",
        "thats all i can think of", "thats all for today", "thats it for today",
        "thats what happened", "im done", "im finished", "the end", "end of story",
        "nothing more to say", "nothing else to say", "nothing else really", "that is all",
        "that is it",
    }
)  # fmt: skip
# Said after a closing without reopening the story ("that's my story really", "... yeah").
_AFTER_CLOSING = frozenset(
    {"really", "yeah", "yes", "i", "guess", "think", "suppose", "so", "um", "uh", "anyway",
     "then", "now", "honestly", "basically", "ok", "okay", "right"}
)  # fmt: skip
_LONGEST_CLOSING = max(len(c.split()) for c in CLOSINGS)
# A word that ties the phrase into its own clause ("it worked out in the end", "upset because
# I'm done"): then it tells the story, it does not close it.
_BINDS_CLOSING = frozenset(
    {"in", "at", "by", "to", "towards", "till", "until", "near", "of", "for", "from", "with",
     "through", "because", "cause", "since", "if", "when", "unless", "whether"}
)  # fmt: skip


def ends_story(text: str) -> bool:
    """Does the reply end the way people end a story ("... and that's all")? True for a bare
    done-phrase too; False where the phrase goes on ("that's all I could think about")."""
    if is_done(text):
        return True
    tokens = [t.replace("'", "") for t in normalize(text)]
    while tokens and tokens[-1] in _AFTER_CLOSING:
        tokens.pop()
    for n in range(1, min(_LONGEST_CLOSING, len(tokens)) + 1):
        bound = n < len(tokens) and tokens[-n - 1] in _BINDS_CLOSING
        if _phrase(tokens[-n:]) in CLOSINGS and not bound:
            return True
    return False

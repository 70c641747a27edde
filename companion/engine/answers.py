"""Turn a participant's spoken or typed reply into an answer, or refuse to guess.

Pure functions, no I/O. The rule: a parsed value is either what the participant
clearly meant or nothing. Anything unclear, hedged, negated or contradictory is
`UNCLEAR`, so the engine reprompts and finally stores a missing value. A wrong
stored value is the worst bug this product can have.

The words a reply is understood with (fillers, hedges, yes and no, skip and repeat, ...) are
data: the protocol's [answers] table, passed in as `AnswerWords` by the caller. Only the number
words are the parser's own grammar.
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
FORM_SLOT = "{n}"  # where a spoken form's number goes


@dataclass(frozen=True)
class AnswerWords:
    """The words replies are parsed with: the protocol's [answers] (engine.answer_words checks
    them at load; companion/data/default_protocol.toml ships them). Entries are written as
    `normalize` reads a reply: lower-case words between single spaces."""

    # Words that carry no meaning around a single rating ("I'd say a four, please"). Any
    # other word, not a number and not an anchor, makes the reply unclear.
    fillers: frozenset[str]
    skip: frozenset[str]  # a request to skip the question, as the whole reply
    repeat: frozenset[str]  # a request to hear the question again, as the whole reply
    yes: frozenset[str]
    no: frozenset[str]
    # Words that make a number uncertain or deny it; none may be a filler (checked at load).
    hedges: frozenset[str]
    done: frozenset[str]  # "nothing more to add", as the whole story turn
    # How people end a story, said last (written without apostrophes: a recogniser often
    # drops them); after_closing may follow one, binds_closing before one ties it into a
    # clause of the story ("in the end"), so it does not close it.
    closings: frozenset[str]
    after_closing: frozenset[str]
    binds_closing: frozenset[str]
    # Dropped before a reply is matched: against skip/repeat, yes/no, done.
    command_ignored: frozenset[str]
    yes_no_ignored: frozenset[str]
    done_ignored: frozenset[str]
    # The phrases a grammar recogniser listens for: yes/no answers (and the read-back) and
    # the skip/repeat requests every rating question accepts.
    spoken_yes_no: tuple[str, ...]
    spoken_commands: tuple[str, ...]
    # Unclear replies a grammar recognizer listens for beside the answers, so that they are
    # heard as themselves (and asked again); none may read as an answer or a request.
    spoken_hedges: tuple[str, ...]
    # How a rating is said around its number ("i'd say {n}") and a number said with a doubt
    # ("{n} i think"): templates, `FORM_SLOT` standing for each number of the item's scale.
    spoken_answer_forms: tuple[str, ...]
    spoken_hedge_forms: tuple[str, ...]
    # Replies to the daily invitation ([schedule] invitation), each as the whole reply or,
    # if several words, anywhere in it: later is tried before no (a postponement is never a
    # refusal), then no, then yes; a plain yes or no of the lists above counts too.
    invite_yes: frozenset[str]
    invite_later: frozenset[str]
    invite_no: frozenset[str]
    invite_ignored: frozenset[str]  # dropped from an invitation reply before it is matched

    @property
    def invite_vocabulary(self) -> tuple[str, ...]:
        """What a grammar recogniser listens for after the invitation."""
        return tuple(sorted(self.invite_yes | self.invite_later | self.invite_no))

    def spoken_forms(self, numbers: Sequence[str]) -> tuple[str, ...]:
        """The answer and hedge forms with each of `numbers` in the slot, for a grammar."""
        return tuple(f.replace(FORM_SLOT, n) for f in (*self.spoken_answer_forms,
                                                      *self.spoken_hedge_forms)
                     for n in numbers)  # fmt: skip

    @property
    def longest_closing(self) -> int:
        return max((len(c.split()) for c in self.closings), default=0)


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


def parse_command(tokens: list[str], *, words: AnswerWords) -> Answer | None:
    """Skip and repeat requests, which every question accepts."""
    if not tokens:
        return None
    phrase = _phrase(tokens)
    stripped = _phrase([t for t in tokens if t not in words.command_ignored] or tokens)
    if phrase in words.repeat or stripped in words.repeat:
        return REPEAT
    if phrase in words.skip or stripped in words.skip:
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


def parse_scale(
    text: str, low: int, high: int, anchors: Mapping[int, str] | None = None, *,
    words: AnswerWords,
) -> Answer:  # fmt: skip
    """Parse a rating on an integer scale from `low` to `high` (inclusive).

    Accepts one number (digit or word), optionally "out of <high>" or "/<high>", and/or
    anchor labels that agree with it; fillers around it are ignored. Signs, fractions,
    comparisons, question marks and hedges make the reply unclear (docs/protocol.md: "Answers
    are never guessed").
    """
    command = parse_command(normalize(text), words=words)
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
        if rest[i] not in words.fillers:
            return UNCLEAR  # an unknown word may change the meaning: never guess
        i += 1

    candidates = set(numbers) | set(anchor_values)
    if len(candidates) != 1 or len(numbers) > 1:
        return UNCLEAR
    value = candidates.pop()
    if not low <= value <= high:
        return UNCLEAR
    return Answer("value", value)


def parse_yes_no(text: str, *, words: AnswerWords) -> Answer:
    """Yes (1) or no (0); anything else (hedged, "I think yes", "yes?") is unclear."""
    tokens = normalize(text)
    command = parse_command(tokens, words=words)
    if command is not None:
        return command
    if not _ALLOWED.fullmatch(text):
        return UNCLEAR  # "yes?" is a question, not an answer
    core = [t for t in tokens if t not in words.yes_no_ignored]
    phrase = _phrase(core)
    if phrase in words.yes or (core and all(t in words.yes for t in core)):
        return Answer("value", 1)
    if phrase in words.no or (core and all(t in words.no for t in core)):
        return Answer("value", 0)
    return UNCLEAR


def parse_free_text(text: str, *, words: AnswerWords) -> Answer:
    """Any non-empty reply is the answer, except a bare skip or repeat request."""
    tokens = normalize(text)
    command = parse_command(tokens, words=words)
    if command is not None:
        return command
    stripped = text.strip()
    return Answer("value", stripped) if tokens else UNCLEAR


def is_done(text: str, *, words: AnswerWords) -> bool:
    """Did the participant say they have nothing more to add to their story?"""
    tokens = [t for t in normalize(text) if t not in words.done_ignored]
    return _phrase(tokens) in words.done


def ends_story(text: str, *, words: AnswerWords) -> bool:
    """Does the reply end the way people end a story ("... and that's all")? True for a bare
    done-phrase too; False where the phrase goes on ("that's all I could think about")."""
    if is_done(text, words=words):
        return True
    tokens = [t.replace("'", "") for t in normalize(text)]
    while tokens and tokens[-1] in words.after_closing:
        tokens.pop()
    for n in range(1, min(words.longest_closing, len(tokens)) + 1):
        bound = n < len(tokens) and tokens[-n - 1] in words.binds_closing
        if _phrase(tokens[-n:]) in words.closings and not bound:
            return True
    return False

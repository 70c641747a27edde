"""The protocol's [answers]: the words replies are understood with, as data, checked at load.

The lists live in the protocol file (companion/data/default_protocol.toml ships them); this
module knows their shape and the rules that keep "answers are never guessed" true whatever a
study writes: a filler never carries a number, a doubt, a no or a request; yes and no (and skip
and repeat) never share a phrase; nothing a yes/no question ignores could change its answer;
and every phrase a grammar recogniser listens for parses as what it is there for. A key left
out of a protocol file takes the shipped list.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from companion.engine import answers
from companion.engine.answers import AnswerWords
from companion.settings.validate import Table

KEYS = tuple(f.name for f in fields(AnswerWords))
# Lists matched one token at a time: each entry is one word.
ONE_WORD = ("fillers", "hedges", "after_closing", "binds_closing", "command_ignored",
            "yes_no_ignored", "done_ignored", "invite_ignored")  # fmt: skip
# Lists matched against a reply with its apostrophes removed.
NO_APOSTROPHE = ("closings", "after_closing", "binds_closing")
# Lists that may be empty: nothing dropped before matching is a safe choice (and a grammar
# without phrase forms hears bare numbers only).
MAY_BE_EMPTY = ("command_ignored", "yes_no_ignored", "done_ignored", "invite_ignored",
                "spoken_answer_forms", "spoken_hedge_forms")  # fmt: skip
# What a grammar recogniser listens for, kept in order (as grammars list them).
SPOKEN = ("spoken_yes_no", "spoken_commands", "spoken_hedges", "spoken_answer_forms",
          "spoken_hedge_forms")  # fmt: skip
FORMS = ("spoken_answer_forms", "spoken_hedge_forms")


def parse_answer_words(root: Table, shipped: AnswerWords | None) -> AnswerWords:
    """The [answers] table of a protocol; a key left out is `shipped`'s (None: every key is
    required, as in the shipped file itself)."""
    t = root.sub("answers")
    t.unknown(KEYS)  # first: a misspelt key must not fall back to the shipped list silently

    def part(key: str) -> tuple[str, ...]:
        if shipped is not None and key not in t:
            return tuple(getattr(shipped, key))
        return _entries(t, key)

    sets = {key: frozenset(part(key)) for key in KEYS if key not in SPOKEN}
    spoken: dict[str, Any] = {key: part(key) for key in SPOKEN}
    words = AnswerWords(**sets, **spoken)  # type: ignore[arg-type]
    if shipped is not None:  # shipped forms a study's own words do not read as meant: left out
        kept: dict[str, Any] = {key: tuple(f for f in part(key) if not _form_fault(words, key, f))
                                for key in FORMS if key not in t}  # fmt: skip
        words = replace(words, **kept)
    _check_safety(t, words)
    return words


def _form_fault(w: AnswerWords, key: str, form: str) -> str | None:
    """Why a phrase form does not read as it must with each number 0-10, or None."""
    for n in range(11):
        said = form.replace(answers.FORM_SLOT, answers.NUMBER_NAMES[n])
        got = answers.parse_scale(said, 0, 10, words=w)
        if key == "spoken_answer_forms" and got != answers.Answer("value", n):
            return (f"{said!r} does not read as {n}: a form may add only fillers around the "
                    "number; remove it")  # fmt: skip
        if key == "spoken_hedge_forms" and got != answers.UNCLEAR:
            return (f"{said!r} reads as an answer or a request: a number with a doubt must be "
                    "unclear (add its doubt word to hedges)")  # fmt: skip
    return None


def _entries(t: Table, key: str) -> tuple[str, ...]:
    entries = t.unique(key, t.strings(key, allow_empty=key in MAY_BE_EMPTY))
    for entry in entries:
        if key in FORMS:
            if entry.split().count(answers.FORM_SLOT) != 1:
                raise t.fail(key, f"{entry!r} must hold {answers.FORM_SLOT} once, as a word: "
                                  "where the number goes")  # fmt: skip
            entry = entry.replace(answers.FORM_SLOT, "four")
        if " ".join(answers.normalize(entry)) != entry:
            raise t.fail(key, f"{entry!r} must be written as a reply is read: lower-case words "
                              "between single spaces, no punctuation but apostrophes")  # fmt: skip
        if key in ONE_WORD and " " in entry:
            raise t.fail(key, f"{entry!r} must be one word: this list is matched word by word")
        if key in NO_APOSTROPHE and "'" in entry:
            raise t.fail(key, f"{entry!r}: write it without apostrophes (a reply is matched "
                              "with them removed)")  # fmt: skip
    return entries


def _check_safety(t: Table, w: AnswerWords) -> None:
    """The rules that keep a filler or an ignored word from changing what a reply means."""
    for filler in sorted(w.fillers):
        if filler.isdigit() or filler in answers.NUMBER_WORDS:
            raise t.fail("fillers", f"{filler!r} is a number: a filler must carry no value")
        for key, listed in (("hedges", w.hedges), ("no", w.no), ("skip", w.skip),
                            ("repeat", w.repeat)):  # fmt: skip
            if filler in listed:
                raise t.fail("fillers", f"{filler!r} is also in {key}: ignoring it could turn "
                                        "an unclear reply into a value; remove it")  # fmt: skip
    for a, b in (("yes", "no"), ("skip", "repeat"), ("invite_yes", "invite_later"),
                 ("invite_yes", "invite_no"), ("invite_later", "invite_no")):  # fmt: skip
        both = sorted(getattr(w, a) & getattr(w, b))
        if both:
            raise t.fail(b, f"{both[0]!r} is in {a} as well: a reply must mean one thing")
    said = {word for phrase in w.yes | w.no for word in phrase.split()}
    for word in sorted(w.yes_no_ignored):
        if word in said or word in w.hedges:
            kind = "a hedge" if word in w.hedges else "a word of a yes or no phrase"
            raise t.fail("yes_no_ignored", f"{word!r} is {kind}: ignoring it could change "
                                           "the answer; remove it")  # fmt: skip
    invited = {word for phrase in w.invite_vocabulary for word in phrase.split()}
    for word in sorted(w.invite_ignored & invited):
        raise t.fail("invite_ignored", f"{word!r} is a word of an invitation reply: ignoring it "
                                       "could change the reply; remove it")  # fmt: skip
    for phrase in w.spoken_yes_no:
        if answers.parse_yes_no(phrase, words=w).kind != "value":
            raise t.fail("spoken_yes_no", f"{phrase!r} does not parse as a yes or a no; add it "
                                          "to yes or no, or remove it")  # fmt: skip
    values = {answers.parse_yes_no(p, words=w).value for p in w.spoken_yes_no}
    if values != {0, 1}:
        raise t.fail("spoken_yes_no", "needs a yes and a no, so either answer can be heard")
    for phrase in w.spoken_hedges:
        tokens = answers.normalize(phrase)
        if (
            answers.parse_command(tokens, words=w) is not None
            or answers.parse_yes_no(phrase, words=w).kind == "value"
            or answers.parse_scale(phrase, 0, 10, words=w).kind == "value"
        ):
            raise t.fail("spoken_hedges", f"{phrase!r} reads as an answer or a request: a hedge "
                                          "must be unclear; remove it")  # fmt: skip
    for key in FORMS:
        for form in getattr(w, key):
            fault = _form_fault(w, key, form)
            if fault:
                raise t.fail(key, fault)
    for phrase in w.spoken_commands:
        if len(phrase.split()) < 2:
            raise t.fail("spoken_commands", f"{phrase!r} is one word: a grammar forces a short "
                                            "number onto a short request; give two words or "
                                            "more (skip this one)")  # fmt: skip
        if answers.parse_command(answers.normalize(phrase), words=w) is None:
            raise t.fail("spoken_commands", f"{phrase!r} is not a skip or repeat phrase; add it "
                                            "to skip or repeat, or remove it")  # fmt: skip

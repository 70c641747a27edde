"""Numbers, dates and addresses that identify, typed or said: one grammar of number words
(digits, "double", "oh", teens, tens, letters said as letters, "dash", "dot") for accounts,
cards, phones, IBANs, IPs and references; dates; e-mail addresses; URLs; pinned weekdays."""

from __future__ import annotations

import re
from collections.abc import Callable

from companion.research.words import THRESHOLDS, part, pattern, word_set

Found = tuple[int, int, str]  # start, end, label

UNIT, TENS, _WORD = part("common.UNIT"), part("common.TENS"), part("numbers.WORD")
SAID_DATE, PHONE, SLASHED, SAID_URL = (pattern(f"numbers.{n}") for n in (
    "SAID_DATE", "PHONE", "DATE_SLASHED", "SAID_URL"))
_POSTCODES = [pattern(f"addresses.POSTCODE_{n}") for n in ("UK", "NL", "IE", "CA")]
_RUN, _PIECE = pattern("numbers.RUN"), pattern("numbers.PIECE")
_DIGITS = {**dict.fromkeys(word_set("number_teens", "number_tens"), 2), "hundred": 2,
           "thousand": 3, "double": 1, "triple": 2}  # fmt: skip
_STOP, _LEAST = word_set("context_stop"), THRESHOLDS["phone_digits"]
_SEPS, _BIG = word_set("number_separators"), ("hundred", "thousand")
_EDGE = _SEPS | {"and", "then", "plus"}
_LETTERS = ("zed", "aitch")  # letters said by their names


def _word(w: str, by: list[tuple[str, int, int]]) -> bool:
    return w in ("a", "i") and not (by and len(by[0][0]) == 1 and by[0][0].isalpha())


def said_numbers(text: str) -> list[Found]:
    """Runs of number words that identify: six digits or more ("forty seven" two), four in four
    words, or letters and digits; "and" only after a hundred, "plus" only first."""
    found, segs = [], []  # type: tuple[list[Found], list[list[tuple[str, int, int]]]]
    for run in _RUN.finditer(text):
        segs.append([])
        for p in _PIECE.finditer(text, *run.span()):
            w, prev = p.group(0).lower(), segs[-1][-1][0] if segs[-1] else ""
            if w == "plus" and segs[-1] or w == "and" and prev not in _BIG:
                segs.append([])
            else:
                segs[-1].append((w, *p.span()))
    for seg in segs:
        # "a" and "i" are words, not letters, at its ends unless by a letter ("a b forty two")
        while seg and (seg[0][0] in _EDGE - {"plus"} or _word(seg[0][0], seg[1:2])):
            seg = seg[1:]
        while seg and (seg[-1][0] in _EDGE or _word(seg[-1][0], seg[-2:-1])):
            seg = seg[:-1]
        digits = letters = words = 0
        for i, (w, _, _) in enumerate(seg):
            if re.fullmatch(_WORD, w):  # a unit after a ten adds no digit ("forty seven")
                words += w not in _BIG
                ten = i and re.fullmatch(TENS, seg[i - 1][0]) and re.fullmatch(UNIT, w)
                digits += 0 if ten else _DIGITS.get(w, 1)
            else:
                digits += sum(map(str.isdigit, w))
                letters += len(w) == 1 or w in _LETTERS if w.isalpha() else not re.fullmatch(
                    r"\d+(st|nd|rd|th)?", w)
        if (words or letters) and (digits >= 6 or digits >= 4 and words >= 4 or letters
                                   and digits >= 2 and letters + digits >= 5):  # fmt: skip
            a, b = seg[0][1], seg[-1][2]
            if not SAID_DATE.fullmatch(text, a, b):  # a date said as numbers is a date
                postcode = all(len(w) == 1 for w, _, _ in (seg[0], *seg[-2:])) or any(
                    p.fullmatch(text, a, b) for p in _POSTCODES)  # "l s six two q t", "M14 5TB"
                phone = not letters and 7 <= digits <= 13 and not {w for w, _, _ in seg} & _SEPS
                found.append((a, b, "ADDRESS" if postcode else "PHONE" if phone else "ID"))
    return found


def _spans(p: re.Pattern[str], label: str, text: str) -> list[Found]:
    return [(*m.span(), label) for m in p.finditer(text)]


FINDERS: list[tuple[str, str, Callable[[str], list[Found]], str]] = [  # phones: no dates
    ("phone", "PHONE", lambda text: [(a, b, k) for a, b, k in _spans(PHONE, "PHONE", text)
     if not SLASHED.fullmatch(text, a, b) and sum(map(str.isdigit, text[a:b])) >= _LEAST], "any"),
    ("said_number", "ID", said_numbers, "any"),
    ("said_url", "ADDRESS", lambda text: _spans(SAID_URL, "ADDRESS", text)
     if re.search(r"(?i)\bdot\b", text) else [], "any"),  # a cheap test first: the pattern is slow
]  # fmt: skip

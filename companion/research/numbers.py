"""Numbers, dates and addresses that identify, typed or said: one grammar of number words
(digits, "double", "oh", teens, tens, letters said as letters, "dash", "dot") for accounts,
cards, phones, IBANs, IPs and references; dates; e-mail addresses; URLs; pinned weekdays."""

from __future__ import annotations

import re
from collections.abc import Callable

from companion.research.words import THRESHOLDS, alternation, word_set

Found = tuple[int, int, str]  # start, end, label (not ner's Span: `ner` reads `spoken`)


def alt(*names: str) -> str:  # the named lists' words as one group
    return f"(?:{alternation(*names)})"


DIGIT, UNIT, TEEN, TENS = map(alt, ("said_digits", "number_units", "number_teens", "number_tens"))
_WORD = rf"(?:{DIGIT}|{TEEN}|{TENS}|hundred|thousand)"
# A run of what a number is said with; `said_numbers` cuts it where it stops being one.
_TOKEN = rf"(?:{_WORD}|[a-z]*\d[a-z\d]*|[a-z]|{alt('number_separators')}|plus|and|then)\b"
_RUN = re.compile(rf"(?<![\w'])(?:{_TOKEN}[\s,-]*)+", re.IGNORECASE)
_PIECE = re.compile(_TOKEN, re.IGNORECASE)
_DIGITS = {**dict.fromkeys(word_set("number_teens", "number_tens"), 2), "hundred": 2,
           "thousand": 3, "double": 1, "triple": 2}  # fmt: skip
_STOP, _LEAST = word_set("context_stop"), THRESHOLDS["phone_digits"]
_SEPS, _BIG = word_set("number_separators"), ("hundred", "thousand")
_EDGE = _SEPS | {"and", "then", "plus"}


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
                letters += len(w) == 1 if w.isalpha() else not re.fullmatch(r"\d+(st|nd|rd|th)?", w)
        if (words or letters) and (digits >= 6 or digits >= 4 and words >= 4 or letters
                                   and digits >= 2 and letters + digits >= 5):  # fmt: skip
            a, b = seg[0][1], seg[-1][2]
            if not SAID_DATE.fullmatch(text, a, b):  # a date said as numbers is a date
                postcode = all(len(w) == 1 for w, _, _ in (seg[0], *seg[-2:]))  # "l s six two q t"
                phone = not letters and 7 <= digits <= 13 and not {w for w, _, _ in seg} & _SEPS
                found.append((a, b, "ADDRESS" if postcode else "PHONE" if phone else "ID"))
    return found


_NUM = rf"(?:{TENS}(?:[\s-]{UNIT})?|{TEEN}|{DIGIT}|hundred)"
# "oh four oh nine sixty five", "twenty two eight forty three": a date said as numbers
_DAY = rf"(?:(?:oh|one|two|three)\s+{UNIT}|{UNIT}|{TEEN}|twenty(?:[\s-]{UNIT})?|thirty(?:\sone)?)"
_MONTH = rf"(?:(?:oh\s+)?{UNIT}|ten|eleven|twelve|one\s+(?:oh|zero|one|two))"
SAID_DATE = re.compile(rf"(?<![\w'])(?:{_DAY}\s+{_MONTH}\s+(?:(?:nineteen|twenty)\s+(?:{TENS}"
                       rf"(?:[\s-]{UNIT})?|oh\s+{UNIT})|{TENS}(?:[\s-]{UNIT})?|oh\s+{UNIT}))\b"
                       rf"(?!\s+{_NUM}\b)", re.IGNORECASE)  # fmt: skip
EXTENSION = re.compile(  # "ext. 2041", "extension two oh four one"
    rf"\bext(?:ension|n)?\.?\s*(?:\d{{1,6}}|{_NUM}(?:\s+{_NUM}){{0,5}})\b", re.IGNORECASE
)
# Letters and three digits or more, one token or in groups: "QQ 12 34 56 C", "WMT/PN/0088214".
ID = re.compile(r"\b(?=(?:[A-Z0-9/-]*\d){3})(?=[A-Z0-9/-]*[A-Z])[A-Z0-9/-]{5,}\b")
GROUPED_ID = re.compile(  # "ISDS 341907", "UK 0 541783", a holding "36/411/0027"
    r"\b[A-Z]{1,3}(?:\s?\d{2,}){2,4}(?:\s?[A-Z\d])?\b|\b[A-Z]{2,5}(?:\s\d{1,2})?\s\d{5,}\b"
    r"|\b\d{2,3}/\d{3}/\d{3,5}\b"
)
PLATE = re.compile(r"\b[A-Z]{2}\d{2}\s?[A-Z]{3}\b")  # a UK number plate ("BP68 WZN")
SORT_CODE = re.compile(r"(?<![\d-])\d{2}-\d{2}-\d{2}(?![\d-])")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
IP = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
# Phone numbers: 7+ digits with optional country code and separators ("+56 9 5555 0100").
PHONE = re.compile(r"(?<![\w])(?:\+\d{1,3}(?:[\s.-]?\d{1,5}){2,5}"
                   r"|(?:\+\d{1,3}[\s.-]?)?(?:\(?\d{2,5}\)?[\s.-]{0,3}){2,4}\d{2,4})(?![\w])")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# The same with its dots lost ("ann lee@mail co uk"): the word before is its first part.
LOST_DOTS = re.compile(rf"\b(?:[a-z][\w-]*\s)?[\w+-]+@[\w-]+(?:\s{alt('email_endings')}\b)+",
                       re.IGNORECASE)  # fmt: skip
_END = alternation("url_endings")
URL = re.compile(rf"(?:\bhttps?://|\bwww\.|\b(?=[\w.-]+\.(?:{_END})\b))[\w-]+(?:\.[\w-]+)*"
                 r"(?:/[\w./?=&%#+~-]*[\w/])?", re.IGNORECASE)  # fmt: skip
# "w w w dot smith plumbing dot co dot uk slash bins": not the words before ("the site is").
_LABEL = rf"(?!{alt('url_intro', 'number_separators')}\b)[a-z][a-z0-9]*"
_SAID_END = rf"(?:{_END}|[a-z]\s[a-z])\b"
SAID_URL = re.compile(
    r"\b(?:h\s+t\s+t\s+p\s*s?\s+colon\s+(?:(?:forward\s+)?slash\s+){2})?(?:w\s+w\s+w\s+dot\s+)?"
    rf"{_LABEL}(?:\s+(?:(?:dot|dash|hyphen)\s+)?{_LABEL}){{0,3}}\s+dot\s+{_SAID_END}"
    rf"(?:\s+dot\s+{_SAID_END})?(?:\s+slash(?:\s+{_LABEL}){{1,3}}(?:\s+dot\s+[a-z]+)?)*", re.I)
_MONTHS, _ORD = alt("months", "month_abbreviations"), r"\d{1,2}(?:st|nd|rd|th)?"
DATES = [
    re.compile(r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b(?:19|20)\d\d-[01]?\d-[0-3]?\d\b"),
    re.compile(rf"\b{_ORD}\s+(?:of\s+)?{_MONTHS}\b\.?(?:,?\s+\d{{4}})?", re.IGNORECASE),
    re.compile(rf"\b{_MONTHS}\.?\s+(?:the\s+)?{_ORD}\b(?:,?\s+\d{{4}})?", re.IGNORECASE),
]
# A year, with the day it names if any: dates pin people down.
YEAR = re.compile(rf"\b(?:(?i:{alternation('feast_days')})\s+(?i:day|eve|night|sunday|monday)\s+)?"
                  r"(?:19|20)\d\d\b")  # fmt: skip
WEEKDAY = re.compile(  # "last Tuesday", "this Friday"; not "every Tuesday" or "on Mondays"
    rf"\b{alt('weekday_pinning')}\s+{alt('weekdays')}\b(?!')", re.IGNORECASE
)


PATTERNS: list[tuple[str, str, re.Pattern[str]]] = [
    ("email", "EMAIL", EMAIL), ("year", "DATE", YEAR), ("said_date", "DATE", SAID_DATE),
    *zip(("date_slashed", "date_day_month", "date_month_day"), ("DATE",) * 3, DATES, strict=True),
    ("id", "ID", ID), ("grouped_id", "ID", GROUPED_ID), ("plate", "ID", PLATE),
    ("sort_code", "ID", SORT_CODE), ("iban", "ID", IBAN), ("ip_address", "ID", IP),
    ("extension", "PHONE", EXTENSION), ("weekday_pinned", "DATE", WEEKDAY),
    ("url", "ADDRESS", URL),  # a web address: no tag of its own yet
]  # fmt: skip


def _spans(p: re.Pattern[str], label: str, text: str) -> list[Found]:
    return [(*m.span(), label) for m in p.finditer(text)]


FINDERS: list[tuple[str, str, Callable[[str], list[Found]], str]] = [  # phones: no dates
    ("phone", "PHONE", lambda text: [(a, b, k) for a, b, k in _spans(PHONE, "PHONE", text)
     if not DATES[0].fullmatch(text, a, b) and sum(map(str.isdigit, text[a:b])) >= _LEAST], "any"),
    ("said_number", "ID", said_numbers, "any"),
    ("said_url", "ADDRESS", lambda text: _spans(SAID_URL, "ADDRESS", text)
     if re.search(r"(?i)\bdot\b", text) else [], "any"),  # a cheap test first: the pattern is slow
    # ids and groups as a recogniser writes them; e-mail addresses with their dots lost
    ("upper_id", "ID", lambda text: [s for p in (ID, GROUPED_ID) for s in _spans(
        p, "ID", text.upper()) if text[s[0] : s[1]].split()[0].lower() not in _STOP], "lower"),
    ("lost_dots", "EMAIL", lambda text: _spans(LOST_DOTS, "EMAIL", text), "lower"),
]  # fmt: skip

"""Numbers that identify, typed or said: one grammar of number words (digits, "double",
"oh", teens, tens, hundreds, letters said as letters, "dash", "slash", "dot", "point") for
account, card, phone, IBAN and IP numbers and references; dates said as numbers; phone
extensions; IBANs and IP addresses typed; URLs and domains typed or spelled out; a weekday
that pins a day ("next Tuesday")."""

from __future__ import annotations

import re

from companion.research.ner import Span
from companion.research.words import alternation, word_set



def alt(*names: str) -> str:
    """The named lists' words as one group."""
    return f"(?:{alternation(*names)})"


DIGIT, UNIT, TEEN, TENS = map(alt, ("said_digits", "number_units", "number_teens", "number_tens"))
_SEPS = word_set("number_separators")
_WORD = rf"(?:{DIGIT}|{TEEN}|{TENS}|hundred|thousand)"
# A run of what a number is said with; `said_numbers` cuts it where it stops being one.
_TOKEN = rf"(?:{_WORD}|[a-z]*\d[a-z\d]*|[a-z]|{alternation('number_separators')}|plus|and|then)"
_RUN = re.compile(rf"(?<![\w'])(?:{_TOKEN}\b[\s,-]*)+", re.IGNORECASE)
_PIECE = re.compile(rf"{_TOKEN}\b", re.IGNORECASE)
_DIGITS = {**dict.fromkeys(word_set("number_teens", "number_tens"), 2), "hundred": 2,
           "thousand": 3, "double": 1, "triple": 2}  # fmt: skip


def said_numbers(text: str) -> list[Span]:
    """Runs of number words long enough to identify: six digits or more ("double" and "oh"
    counted, "forty seven" two), four in four number words, or letters and digits together."""
    found = []
    for run in _RUN.finditer(text):
        pieces = list(_PIECE.finditer(run.group(0)))
        # "and" joins only a hundred to its rest ("two hundred and one"), "plus" only leads
        cuts = [i for i, p in enumerate(pieces) if (w := p.group(0).lower()) == "and" and (
            i == 0 or pieces[i - 1].group(0).lower() not in ("hundred", "thousand"))
            or w == "plus" and i > 0]  # fmt: skip
        for seg in _segments(pieces, cuts):
            found += _number(run.start(), seg)
    return found


def _segments(pieces: list[re.Match[str]], cuts: list[int]) -> list[list[re.Match[str]]]:
    bounds = [-1, *cuts, len(pieces)]
    return [pieces[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _number(offset: int, seg: list[re.Match[str]]) -> list[Span]:
    edge = _SEPS | {"and", "then", "a", "i"}
    while seg and seg[0].group(0).lower() in edge:
        seg = seg[1:]
    while seg and seg[-1].group(0).lower() in edge | {"plus"}:
        seg = seg[:-1]
    digits = letters = words = 0
    last = ""
    for p in seg:
        w = p.group(0).lower()
        if re.fullmatch(_WORD, w):
            words += w not in ("hundred", "thousand")
            digits += 0 if last in word_set("number_tens") and re.fullmatch(UNIT, w) else (
                _DIGITS.get(w, 1))  # fmt: skip
        elif any(c.isdigit() for c in w):
            digits += sum(c.isdigit() for c in w)
            letters += any(c.isalpha() for c in w)
        else:
            letters += len(w) == 1
        last = w
    if not (digits >= 6 or digits >= 4 and words >= 4 or letters and digits >= 2 and
            letters + digits >= 5) or not words and not letters:  # fmt: skip
        return []
    kind = "PHONE" if seg[0].group(0).lower() in ("oh", "zero", "plus") and not letters else "ID"
    return [Span(offset + seg[0].start(), offset + seg[-1].end(), kind)]


_NUM = rf"(?:{TENS}(?:[\s-]{UNIT})?|{TEEN}|{DIGIT}|hundred)"
# "oh four oh nine sixty five", "twenty two eight forty three": a date of birth said as numbers
_DAY = rf"(?:(?:oh\s+)?{UNIT}|{TEEN}|twenty(?:[\s-]{UNIT})?|thirty(?:[\s-]one)?|(?:oh|one|two|three)\s+{UNIT})"
_MONTH = rf"(?:(?:oh\s+)?{UNIT}|ten|eleven|twelve|one\s+(?:oh|zero|one|two))"
SAID_DATE = re.compile(
    rf"(?<![\w'])(?:{_DAY}\s+{_MONTH}\s+(?:(?:nineteen|twenty)\s+(?:{TENS}(?:[\s-]{UNIT})?|"
    rf"oh\s+{UNIT})|{TENS}(?:[\s-]{UNIT})?|oh\s+{UNIT}))\b(?!\s+{_NUM}\b)",
    re.IGNORECASE,
)
EXTENSION = re.compile(  # "ext. 2041", "extension two oh four one"
    rf"\b(?:ext(?:ension|n)?\.?)\s*(?:\d{{1,6}}|{_NUM}(?:\s+{_NUM}){{0,5}})\b", re.IGNORECASE
)
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
IP = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_END = alternation("url_endings")
URL = re.compile(
    rf"(?:\bhttps?://|\bwww\.|\b(?=[\w.-]+\.(?:{_END})\b))[\w-]+(?:\.[\w-]+)*"
    r"(?:/[\w./?=&%#+~-]*[\w/])?",
    re.IGNORECASE,
)
# "w w w dot smith plumbing dot co dot uk slash bins": a domain spelled out, not the words
# before it ("the website is").
_LABEL = rf"(?!(?:{alternation('url_intro', 'number_separators')})\b)[a-z][a-z0-9]*"
_SAID_END = rf"(?:{_END}|[a-z]\s[a-z])\b"
SAID_URL = re.compile(
    r"\b(?:h\s+t\s+t\s+p\s*s?\s+colon\s+(?:(?:forward\s+)?slash\s+){2})?(?:w\s+w\s+w\s+dot\s+)?"
    rf"{_LABEL}(?:\s+(?:(?:dot|dash|hyphen)\s+)?{_LABEL}){{0,3}}\s+dot\s+{_SAID_END}"
    rf"(?:\s+dot\s+{_SAID_END})?(?:\s+slash(?:\s+{_LABEL}){{1,3}}(?:\s+dot\s+[a-z]+)?)*",
    re.IGNORECASE,
)
_WEEKDAY = alternation("weekdays")
WEEKDAY = re.compile(  # "last Tuesday", "this Friday"; not "every Tuesday" or "on Mondays"
    rf"\b(?:{alternation('weekday_pinning')})\s+(?:{_WEEKDAY})\b(?!')", re.IGNORECASE
)

PATTERNS: list[tuple[str, str, re.Pattern[str]]] = [
    ("said_date", "DATE", SAID_DATE),
    ("extension", "PHONE", EXTENSION),
    ("iban", "ID", IBAN),
    ("ip_address", "ID", IP),
    ("url", "ADDRESS", URL),  # a web address: no tag of its own yet
    ("said_url", "ADDRESS", SAID_URL),
    ("weekday_pinned", "DATE", WEEKDAY),
]

"""Names by what is not English, in text a recogniser wrote (no capitals): a recall policy.

The context rules (`casing`, `context`) need a cue around a word and mostly a list that knows
the name; what they miss in lower-case speech is a name no list holds ("wojtek", "niamh",
"kerrera") or one said with no cue ("hamish wants to go fishing"). A recogniser writes only
words of its vocabulary, so a word that is no English word (Webster's with its inflections,
prefixes and compounds) and not among the ~29,000 most frequent English words is, in a
story, almost always a name, and is redacted wherever it stands. So is a census name or
GeoNames place that is an English word too rare for that frequency list ("bramble"). This
spends part of the over-redaction budget on purpose (unknown brands and typos go too),
which the benchmark measures on ordinary text.

The frequencies are wordfreq's small English list (`wordfreq` 3.1.1, Apache-2.0 code; data
CC BY-SA 4.0), read directly from its pinned, sha256-checked data file (no wordfreq import).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from companion.research.casing import _NOT_PROPER, _PLACE_CUES
from companion.research.context import STOP
from companion.research.gazetteer import Gazetteer
from companion.research.ner import INSTALL_HINT, NerUnavailable, Span
from companion.research.words import THRESHOLDS, TOKEN

FREQUENCIES = ("wordfreq", "data/small_en.msgpack.gz")
FREQUENCIES_SHA256 = "f94a80cba6a3857b260d0666b5432bb7ea9b85315574dee9c306e87f61298247"
# Zipf scale (log10 of uses per billion words): 3 is once per million words.
NAME_ZIPF = THRESHOLDS["rare_name_zipf"]  # a listed name that is a rarer English word: a name
UNKNOWN_ZIPF = THRESHOLDS["english_zipf"]  # a word no dictionary knows this frequent is English

_WORD = TOKEN
_PREFIXES = ("co", "re", "un", "non", "over", "out", "mis", "pre", "under", "super")
_SPELLED_TOKEN = re.compile(
    r"[a-z]|dot|at|underscore|dash|hyphen|zero|oh|one|two|three|four|five|six|seven|eight|"
    r"nine|double|triple"
)
_JOINS = {"dot", "at", "underscore", "dash", "hyphen"}


@lru_cache(maxsize=1)
def load_frequencies() -> dict[str, float]:
    """word -> Zipf frequency for the English words of zipf >= 3, checked and read once."""
    # Located, not imported: importing wordfreq would load ftfy, langcodes and regex for nothing.
    spec = importlib.util.find_spec(FREQUENCIES[0])
    if spec is None or not spec.submodule_search_locations:
        raise NerUnavailable(f"word frequencies {FREQUENCIES[0]} missing; {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / FREQUENCIES[1]
    raw = path.read_bytes() if path.is_file() else b""
    if hashlib.sha256(raw).hexdigest() != FREQUENCIES_SHA256:
        raise NerUnavailable(f"{path}: word frequencies missing or not pinned; {INSTALL_HINT}")
    # wordfreq's "cB" format: a header, then one list of words per centibel below 1.
    import msgpack  # a dependency of wordfreq (the extra), so not imported before here

    packed = msgpack.unpackb(gzip.decompress(raw), raw=False)
    return {w: 9 - i / 100 for i, bucket in enumerate(packed[1:]) for w in bucket}


def rare(word: str) -> bool:
    """An English word rarer than NAME_ZIPF ("tig"), or none; False without the word list."""
    try:
        return load_frequencies().get(word, 0.0) < NAME_ZIPF
    except NerUnavailable:
        return False


def english(word: str, gaz: Gazetteer, freq: dict[str, float]) -> bool:
    """An English word: in Webster's (inflected: "stunned", "funniest"), a prefixed form of
    one ("coworker"), a compound of two common enough to be listed ("paycheck"), or frequent
    in today's English whatever the dictionary says ("internet", "tacos")."""
    if gaz.is_ordinary(word) or freq.get(word, 0.0) >= UNKNOWN_ZIPF:
        return True
    if any(word.endswith(s) and freq.get(word[: -len(s)], 0.0) >= UNKNOWN_ZIPF
           for s in ("s", "es")):  # fmt: skip
        return True  # "tacos": the plural of a frequent word
    for prefix in _PREFIXES:
        rest = word[len(prefix) :].lstrip("-")
        if word.startswith(prefix) and len(rest) > 3 and english(rest, gaz, freq):
            return True
    if word in freq:  # "paycheck", "restroom": two words, and listed (names rarely split so)
        return any(gaz.is_ordinary(word[:i]) and gaz.is_ordinary(word[i:].lstrip("-"))
                   for i in range(3, len(word) - 2))  # fmt: skip
    return False


def unknown_names(
    text: str, gaz: Gazetteer, freq: dict[str, float], common: Callable[[str], bool]
) -> list[Span]:
    """Words of lower-case `text` that are no English word, or a listed name or place too
    rare as a word; a PLACE when the gazetteer lists it as one or a place cue precedes it."""
    spans = []
    prev = ""
    for m in _WORD.finditer(text):
        token = m.group(0)
        word = (token[:-2] if token.endswith("'s") else token).strip("'-")
        if (len(word) > 2 and word not in STOP and word not in _NOT_PROPER and not common(word)
                and (not english(word, gaz, freq)
                     or gaz.is_name(word) and freq.get(word, 0.0) < NAME_ZIPF)):  # fmt: skip
            place = word in gaz.place_names or prev in _PLACE_CUES and word not in gaz.people
            spans.append(Span(m.start(), m.start() + len(word), "PLACE" if place else "PERSON"))
        prev = token
    return spans


def spelled(text: str, names: list[Span]) -> list[Span]:
    """What a speaker spells letter by letter: a run with three letters or more, with the
    digits, "dot"s and "at"s inside it ("c a l l o w a y", "k dot l e e", "a b one two c");
    and initials read
    before a name ("e j [calloway]"). Never "a" or "i" alone before a word."""
    tokens = list(re.finditer(r"\S+", text))
    spans = []
    i = 0
    while i < len(tokens):
        j = i
        while j < len(tokens) and _SPELLED_TOKEN.fullmatch(tokens[j].group(0)):
            j += 1
        while j > i and tokens[j - 1].group(0) in _JOINS:  # "... y at gmail": the run ends
            j -= 1
        run = [t.group(0) for t in tokens[i:j]]
        if sum(len(t) == 1 for t in run) >= 3 and len(run[0]) == 1:
            spans.append(Span(tokens[i].start(), tokens[j - 1].end(), "PERSON"))
            i = j
        else:
            i += 1
    starts = {s.start for s in names if s.label in ("PERSON", "PLACE")}  # a guess either way
    for k, tok in enumerate(tokens):
        if tok.start() not in starts:
            continue
        first = k
        while first > 0 and re.fullmatch(r"[b-hj-z]", tokens[first - 1].group(0)):
            first -= 1
        if first < k:
            spans.append(Span(tokens[first].start(), tok.start() - 1, "PERSON"))
    return spans


CANDIDATE_ZIPF = THRESHOLDS["candidate_zipf"]  # a first name this frequent as a word stays


def name_candidates(view: str, gaz: Gazetteer, freq: dict[str, float]) -> str:
    """`view` with census first names that are also English words capitalised ("rory",
    "jasper"), so the NER pipeline judges them by their context; only its entities count."""
    chars = list(view)
    for m in _WORD.finditer(view):
        word = m.group(0)
        if (word in gaz.first and word not in STOP and word not in _NOT_PROPER
                and len(word) > 2 and freq.get(word, 0.0) < CANDIDATE_ZIPF):  # fmt: skip
            chars[m.start()] = chars[m.start()].upper()
    return "".join(chars)


def typed_unknown(text: str, gaz: Gazetteer, freq: dict[str, float]) -> list[Span]:
    """Capitalised words of typed text that the same policy takes for names: at a sentence's
    start one that is no English word ("Priya and I"), inside one also an English word too
    rare to be capitalised for any other reason ("or Cally if")."""
    spans = []
    for m in re.finditer(r"[A-Z][a-z'-]+", text):
        word = m.group(0)
        base = (word[:-2] if word.endswith("'s") else word).strip("'-").lower()
        if base in _NOT_PROPER or base in STOP or len(base) < 3:
            continue
        if m.start() and text[m.start() - 1].isalnum():  # "McDonald": not a word's start
            continue
        before = text[: m.start()].rstrip()
        start = not before or before[-1] in ".!?\"'(:;\n"
        if (not english(base, gaz, freq)) if start else freq.get(base, 0.0) < NAME_ZIPF:
            spans.append(Span(m.start(), m.start() + len(base), gaz.label(base)))
    return spans

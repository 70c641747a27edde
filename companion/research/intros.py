"""How the participant gives their own name: "my surname is ...", "call me grandpa ...",
"it's ... here", "... speaking", "... is my name". Group 1 of each pattern in `OWN` is the
name (up to three words, a title before it skipped); the Redactor keeps the words that are
names and redacts them in every text of the export. `nicknames` gives the short forms of
the configured first name.
"""

from __future__ import annotations

import re

from companion.research.words import alternation, word_set

GLUE_WORDS = word_set("glue")
PARTICLES = word_set("surname_particles")
_TITLES = alternation("titles")
# A name word: no glue word or title, an initial ("Z.") too.
_WORD = rf"(?!(?:{alternation('glue')}|{_TITLES})\b)[a-z](?:[\w'-]+|\.)"


_PARTICLE = rf"(?:\s+(?:{alternation('surname_particles')}))*"  # "de", "van der"


def _name(words: int) -> str:
    return rf"({_WORD}(?:(?:{_PARTICLE}\s+|,?\s+or\s+){_WORD}){{0,{words - 1}}})"  # "bel or belle"


_NAME_IS = r"my (?:first |last |sur|family |full |maiden |married |middle |christian |given )?name"
_TITLE = rf"(?:(?:{_TITLES})\.?\s+)?"
OWN = (
    re.compile(
        rf"\b(?:{_NAME_IS}(?: is| was|'s)|(?:i am|i'm|i was) (?:called|known as)|i go by|"
        r"call(?:s|ed|ing)? me|(?:know(?:s|n)?|knew) me as|the name(?:'s| is)|"
        r"(?:name|put|signed|spelt|spelled) (?:it )?(?:as|under)|"
        rf"(?:i am|i'm)(?=\s+(?:{_TITLES})\b))\s+"
        rf"{_TITLE}{_name(3)}",
        re.IGNORECASE,
    ),
    re.compile(
        rf"(?:\b(?:{alternation('caller_openers')})\s+|^|[.,!?]\s*)"
        rf"{_name(2)}\s+(?:here|speaking|calling)\b",
        re.IGNORECASE,
    ),
    re.compile(rf"\b{_name(1)}(?:'s| is| was) {_NAME_IS}\b", re.IGNORECASE),
)
# A word spelled out letter by letter ("q u i l l s"): a name or an address.
SPELLED = re.compile(r"(?<![\w'])(?:[a-z]\s+){3,}[a-z]\b", re.IGNORECASE)
_ENDINGS = ("", "ie", "y", "s", "sie", "o")


def nicknames(first: str) -> set[str]:
    """Short forms of a first name: its beginnings of three letters or more, and those of
    its later syllables (a consonant then a vowel), alone or with a pet ending ("zelda":
    zel, zeld, zellie, zelly, zels; "elizabeth": beth, bethie)."""
    first = first.lower()
    starts = [0] + [i for i in range(1, len(first) - 2)
                    if first[i] not in "aeiouy" and first[i + 1] in "aeiouy"]  # fmt: skip
    out = set()
    for i in starts:
        for n in range(i + 3, len(first) + 1):
            stem = first[i:n]
            for ending in _ENDINGS:
                out.add(stem + ending)
                if ending[:1] in ("i", "y") and stem[-1] not in "aeiouy":
                    out.add(stem + stem[-1] + ending)  # "zel" + "l" + "ie"
    out.discard(first)
    return out

"""How the participant gives their own name: "my surname is ...", "call me grandpa ...",
"it's ... here", "... speaking", "... is my name". Group 1 of each pattern in `OWN` is the
name (up to three words, a title before it skipped); the Redactor keeps the words that are
names and redacts them in every text of the export. `nicknames` gives the short forms of
the configured first name.
"""

from __future__ import annotations

from companion.research.words import pattern, word_set

GLUE_WORDS = word_set("glue")
PARTICLES = word_set("surname_particles")
OWN = tuple(pattern(f"intros.{n}") for n in ("GIVEN", "SPEAKING", "IS_MY_NAME"))
_ENDINGS = ("", "ie", "y", "s", "sie", "o")


def nicknames(first: str) -> set[str]:
    """Short forms of a first name: its beginnings of three letters or more, and those of
    its later syllables (a consonant then a vowel), alone or with a pet ending ("zelda":
    zel, zeld, zellie, zelly, zels; "elizabeth": beth, bethie)."""
    first = first.lower()
    starts = [0] + [i for i in range(1, len(first) - 2)
                    if first[i] not in "aeiouy" and first[i + 1] in "aeiouy"]  # fmt: skip
    stems = {first[i:n] for i in starts for n in range(i + 3, len(first) + 1)}
    out = {stem + ending for stem in stems for ending in _ENDINGS}
    # a consonant doubled before "ie" and "y": "zel" + "l" + "ie"
    out |= {s + s[-1] + e for s in stems for e in ("ie", "y") if s[-1] not in "aeiouy"}
    return out - {first}

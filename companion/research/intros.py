"""How people give a name, their own above all ("my surname is ...", "it's ... here",
"... speaking", "call me ..."). Case-insensitive patterns whose group 1 (or, for `CALLER`,
1 or 2) is the name; `deidentify` decides which words count as names and remembers the
participant's own.
"""

from __future__ import annotations

import re

from companion.research.words import alternation, word_set

# Words that end an introduced name ("my name is zelda and I ..."): a recogniser writes no
# capitals, so a second word after "my name is" counts as a surname unless it is one of these.
GLUE = alternation("glue")
GLUE_WORDS = word_set("glue")
NAME_IS = r"(?:first |last |sur|family |full |maiden |married |middle |christian |given )?name"
# One name word, a word that is not glue, and a name of one word or two (the second not glue).
_WORD = r"(?i:[a-z][\w'-]+)"
_NOT_GLUE = rf"(?!(?i:{GLUE})\b)"
_NAME = rf"{_WORD}(?:\s+{_NOT_GLUE}{_WORD})?"
INTRODUCED = re.compile(
    rf"\b(?i:my {NAME_IS}(?: is| was|'s)|(?:i am|i'm|i was) (?:called|known as)|call me|"
    r"(?:they|people|everyone|everybody|friends|folk|most people) call(?:s|ed)? me|"
    r"(?:name|put|signed|spelt|spelled) (?:it )?(?:as|under)|the name's|the name is|"
    r"i go by|i'm mrs|i'm mr|i'm miss)\s+"
    rf"{_NOT_GLUE}({_NAME})"
)
# The names a participant gives as theirs, remembered for the rest of the export:
# "my surname is pennick", "pennick is my surname", "the name's pennick".
OWN_NAME = re.compile(
    rf"\b(?i:my {NAME_IS}(?: is| was|'s)|(?:i am|i'm|i was) known as|the name's|i go by)\s+"
    rf"({_NAME})"
    rf"|\b({_NOT_GLUE}{_WORD})(?:'s| is| was) my {NAME_IS}\b"
)
# A word spelled out letter by letter ("h a v e r f o r d"): a name or an address.
SPELLED = re.compile(r"(?<![\w'])(?:[a-z]\s+){3,}[a-z]\b", re.IGNORECASE)
# "it's zelda here", "zelda pennick speaking", "this is zelda again": a caller's name.
CALLER = re.compile(
    rf"\b(?i:it's|its|it is|this is)\s+({_NOT_GLUE}{_NAME})\s+(?i:here|speaking|calling)\b"
    rf"|(?:^|[.,!?]\s*|\b(?i:hello|hi|hiya|morning|evening|yes|oh)\s+)"
    rf"({_NOT_GLUE}{_NAME})"
    r"\s+(?i:speaking|here)\b"
)
# "my late wife called me zee", "everyone calls me Zellie": a name the participant is
# known by (group 1; `deidentify` keeps it only when it is no ordinary word).
# A second name offered with "or" ("calls me bel or belle") is one too (group 2).
NICKNAME = re.compile(
    rf"\b(?i:call(?:s|ed|ing)?\s+me|know(?:s|n)?\s+me\s+as)\s+{_NOT_GLUE}({_WORD})"
    rf"(?:,?\s+(?i:or)\s+{_NOT_GLUE}({_WORD}))?"
)
_ENDINGS = ("", "ie", "y", "s", "sie", "o")


def nicknames(first: str) -> set[str]:
    """Short forms of a first name a participant may be called by: its beginnings of three
    letters or more, alone or with a pet ending ("zelda": zel, zeld, zellie, zelly, zels)."""
    first = first.lower()
    out = set()
    for n in range(3, len(first)):
        stem = first[:n]
        for ending in _ENDINGS:
            out.add(stem + ending)
            if ending and ending[0] in "iy":
                out.add(stem + stem[-1] + ending)  # "zel" + "l" + "ie"
    out.discard(first)
    return out

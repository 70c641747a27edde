"""How people give a name: their own ("my surname is haverford", "it's zelda here",
"zelda speaking", "call me zed") and anyone's ("our cat's name is misty"). Case-insensitive
patterns whose group 1 (or, for `CALLER`, 1 or 2) is the name; `deidentify` decides which
words count as names and remembers the participant's own.
"""

from __future__ import annotations

import re

# Words that end an introduced name ("my name is zelda and I ..."): a recogniser writes no
# capitals, so a second word after "my name is" counts as a surname unless it is one of these.
GLUE = (
    "and|but|so|or|i|i'm|is|was|by|the|to|from|in|at|of|too|as|if|now|then|though|"
    "actually|really|just|not|my|we|you|he|she|it|that|this|here|there|please|thanks|with|"
    "speaking|again|for|on|after|since|like|though|when|but|because|well|okay|ok|dear|love"
)
NAME_IS = r"(?:first |last |sur|family |full |maiden |married |middle |christian |given )?name"
INTRODUCED = re.compile(
    rf"\b(?i:my {NAME_IS}(?: is| was|'s)|(?:i am|i'm|i was) (?:called|known as)|call me|"
    r"(?:they|people|everyone|everybody|friends|folk|most people) call(?:s|ed)? me|"
    r"(?:name|put|signed|spelt|spelled) (?:it )?(?:as|under)|the name's|the name is|"
    r"i go by|i'm mrs|i'm mr|i'm miss)\s+"
    rf"(?!(?i:{GLUE})\b)((?i:[a-z][\w'-]+)(?:\s+(?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+))?)"
)
# The names a participant gives as theirs, remembered for the rest of the export:
# "my surname is haverford", "haverford is my surname", "the name's haverford".
OWN_NAME = re.compile(
    rf"\b(?i:my {NAME_IS}(?: is| was|'s)|(?:i am|i'm|i was) known as|the name's|i go by)\s+"
    rf"((?i:[a-z][\w'-]+)(?:\s+(?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+))?)"
    rf"|\b((?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+))(?:'s| is| was) my {NAME_IS}\b"
)
# A word spelled out letter by letter ("h a v e r f o r d"): a name or an address.
SPELLED = re.compile(r"(?<![\w'])(?:[a-z]\s+){3,}[a-z]\b", re.IGNORECASE)
# "our cat's name is misty", "her name was edna": anyone's name given.
NAME_GIVEN = re.compile(
    r"\b(?i:(?:his|her|their|its|our|your)|[a-z]+'s)\s+(?i:name)\s+(?i:is|was|'s)\s+"
    rf"(?!(?i:{GLUE})\b)((?i:[a-z][\w'-]+)(?:\s+(?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+))?)"
)
# "it's zelda here", "zelda haverford speaking", "this is zelda again": a caller's name.
CALLER = re.compile(
    rf"\b(?i:it's|it is|this is)\s+((?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+)"
    rf"(?:\s+(?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+))?)\s+(?i:here|speaking|calling)\b"
    rf"|(?:^|[.,!?]\s*|\b(?i:hello|hi|hiya|morning|evening|yes|oh)\s+)"
    rf"((?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+)(?:\s+(?!(?i:{GLUE})\b)(?i:[a-z][\w'-]+))?)"
    r"\s+(?i:speaking|here)\b"
)

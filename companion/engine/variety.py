"""Choosing wordings with memory across sessions, so a month of sessions never sounds like a loop.

Pure: the session passes in what the companion said to this participant on earlier days (from
the turns table, `store.queries.companion_said`), and each choice among alternative wordings
(prompts, follow-ups, topics, acknowledgements) prefers one not said within `avoid_days` days;
when every alternative was said recently, the one said longest ago. A wording counts as said
when a companion turn contains it with any values in its placeholders, so "It sounds like you
felt {feeling}" with "proud" yesterday is the same wording as with "grateful" today.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Said:
    days_ago: int  # 0 = today (this session included)
    text: str


@lru_cache(maxsize=1024)
def pattern(template: str) -> re.Pattern[str]:
    """A regex matching `template` filled with anything, spacing and case ignored."""
    parts = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.extend(re.escape(word) for word in literal.split())
        if field is not None:
            parts.append(r".+?")
    return re.compile(r"\s*".join(parts) if parts else r"(?!)", re.IGNORECASE | re.DOTALL)


class PhraseMemory:
    """What the companion said recently; picks the freshest of several wordings."""

    def __init__(self, said: Iterable[Said] = (), avoid_days: int = 14) -> None:
        self.said = list(said)
        self.avoid_days = avoid_days

    def note(self, text: str) -> None:
        """Something said in this session: never said again today while alternatives remain."""
        self.said.append(Said(0, text))

    def last_said(self, template: str) -> int | None:
        """Days since `template` was last said (0 = today), None if never (as far as we know)."""
        regex = pattern(template)
        days = [s.days_ago for s in self.said if regex.search(s.text)]
        return min(days) if days else None

    def choose(self, templates: Sequence[str], rng: random.Random) -> str:
        """One of `templates`: unsaid within the window if possible, else the stalest."""
        if len(templates) == 1:
            return templates[0]
        age = {t: self.last_said(t) for t in templates}
        fresh = [t for t in templates if age[t] is None or (age[t] or 0) >= max(self.avoid_days, 1)]
        if fresh:
            return rng.choice(fresh)
        oldest = max(a for a in age.values() if a is not None)
        return rng.choice([t for t in templates if age[t] == oldest])

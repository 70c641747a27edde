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
    """A regex matching `template` filled with anything on one line, spacing and case ignored."""
    parts: list[str] = []
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:  # not a template (a topic with a brace): match it literally
        fields = [(template, None, None, None)]
    for literal, field, _, _ in fields:
        parts.extend(re.escape(word) for word in literal.split())
        if field is not None:
            parts.append(r".+?")
    return re.compile(r"\s*".join(parts) if parts else r"(?!)", re.IGNORECASE)


class PhraseMemory:
    """What the companion said recently; picks the freshest of several wordings."""

    def __init__(self, said: Iterable[Said] = (), avoid_days: int = 14) -> None:
        # One text per day, a turn per line: a few searches per wording, not one per turn.
        self.days: dict[int, list[str]] = {}
        for s in said:
            self.days.setdefault(s.days_ago, []).append(s.text.replace("\n", " "))
        self.avoid_days = avoid_days
        self._joined: dict[int, str] = {}

    def note(self, text: str) -> None:
        """Something said in this session: never said again today while alternatives remain."""
        self.days.setdefault(0, []).append(text.replace("\n", " "))
        self._joined.pop(0, None)

    def last_said(self, template: str) -> int | None:
        """Days since `template` was last said (0 = today), None if never (as far as we know)."""
        regex = pattern(template)
        for day in sorted(self.days):
            if day not in self._joined:
                self._joined[day] = "\n".join(self.days[day])
            if regex.search(self._joined[day]):
                return day
        return None

    def fresh(self, templates: Sequence[str]) -> list[str]:
        """The templates not said within the window (never today)."""
        window = max(self.avoid_days, 1)
        return [t for t in templates if (age := self.last_said(t)) is None or age >= window]

    def choose(self, templates: Sequence[str], rng: random.Random | None = None) -> str:
        """One of `templates`: one not said within the window if any, else the stalest.

        Without `rng`, in the given order: the first never said, else the one said longest ago
        (a protocol's first wording is the first said). With `rng`, at random among the fresh.
        """
        if len(templates) == 1:
            return templates[0]
        age = {t: self.last_said(t) for t in templates}
        never = [t for t in templates if age[t] is None]
        if rng is None:
            return never[0] if never else max(templates, key=lambda t: age[t] or 0)
        fresh = never + [t for t in self.fresh(templates) if age[t] is not None]
        if fresh:
            return rng.choice(fresh)
        oldest = max(a for a in age.values() if a is not None)
        return rng.choice([t for t in templates if age[t] == oldest])

"""Gentle memory: now and then, the invitation refers back to a story from an earlier day. Pure.

Only a short topic phrase of the earlier story is ever said back ("your sister's move"), taken
from the participant's own "my ..." words; a story with no such phrase is not recalled. A story
the participant skipped or declined is never a candidate (`store.queries.told_stories` leaves
those out), each story is recalled at most once, and recalls are spaced out.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

# Recall only stories this many days old (not today's, not ancient history).
MIN_AGE_DAYS, MAX_AGE_DAYS = 1, 14
# At least this many days between two recalls, and then only with this chance: "now and then".
GAP_DAYS = 3
CHANCE = 0.6
MAX_WORDS = 3  # of the topic phrase, "my" not counted


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that end a noun phrase after "my": verbs, prepositions, conjunctions, pronouns.
_STOP = _words("""
a an the and or but so because when while if then than that which who whom whose what where to
of in on at for from with by about into onto over under after before since until during as is
was were are be been being am has had have having do did does done will would can could shall
should may might must just also very really too not never always still even only i me my we our
you your he him his she her they them their it its this these those there here got get gets
getting went go goes going came come comes coming said says told tell made make took take gave
give felt feel feels found find saw see seen knew know thought think decided wanted want needed
need started start finally recently yesterday today tomorrow last broke bought brought threw
lost won left ran fell hit put sent kept spent wrote drove flew sold lent let began became
caught chose drew ate fought forgot grew held hurt led meant met paid read rode rang sang sat
slept spoke stood stole swam taught tore understood woke wore worn keeps amazes graduate behind
again back out up down off away home once now half died
""")
# Not topics to bring back a week later: the body, and words too vague to mean anything.
_NOT_TOPICS = _words("""
face ears ear eyes eye hair lap ankle arm arms leg legs head hands hand body underwear mind
life situation self way time day stuff things thing lot
""")
_MY = re.compile(rf"\bmy\s+((?:[a-z][a-z'-]*\s*){{1,{MAX_WORDS}}})", re.IGNORECASE)


@dataclass(frozen=True)
class Recall:
    session_id: int  # the session the story was told in
    days: int  # how long ago it was told (the protocol's `recall_when` says it: `when_band`)
    memory: str  # the topic phrase, "your sister's move"


def topic_phrases(story: str) -> list[str]:
    """Short "your ..." phrases from the participant's "my ..." words, in order of appearance."""
    out: list[str] = []
    for match in _MY.finditer(story):
        words: list[str] = []
        for word in match.group(1).split():
            if word.lower() in _STOP or not word.islower():
                break  # a verb, a preposition or a name: the phrase ends here
            verbish = (
                word.endswith("ed") and len(word) > 4 or word.endswith("ing") and len(word) > 5
            )
            if words and not words[-1].endswith("'s") and verbish:
                break  # "my dog died", "my daughter teaching": a verb (but "my sister's wedding")
            words.append(word.strip("'-"))
        if words and all(words) and words[-1].lower() not in _NOT_TOPICS:
            phrase = "your " + " ".join(words)
            if phrase not in out:
                out.append(phrase)
    return out


# The day counts that end each band of the protocol's `recall_when` wordings: yesterday, two or
# three days, up to a week, up to two weeks, longer.
WHEN_BANDS = (1, 3, 6, 13)


def when_band(days: int) -> int:
    """Which of the protocol's `recall_when` wordings says `days` ago (0 = the first)."""
    return sum(days > end for end in WHEN_BANDS)


def choose_recall(
    today: date,
    told: Sequence[tuple[int, str, str]],
    recalled: Sequence[tuple[str, int]],
    rng: random.Random,
    related: Callable[[str, str], float | None] | None = None,
) -> Recall | None:
    """The earlier story to refer back to today, or None (most days).

    `told`: (session_id, local_date, story) of earlier stories; `recalled`: (local_date,
    session_id) of earlier recalls; `related(phrase, story)`: how well a phrase stands for the
    story (the model's embedding similarity), None = take the longest phrase.
    """
    days_since = [(today - date.fromisoformat(d)).days for d, _ in recalled]
    if any(0 <= d < GAP_DAYS for d in days_since) or rng.random() >= CHANCE:
        return None
    done = {sid for _, sid in recalled}
    for session_id, local_date, story in told:
        age = (today - date.fromisoformat(local_date)).days
        if session_id in done or not MIN_AGE_DAYS <= age <= MAX_AGE_DAYS:
            continue
        phrases = topic_phrases(story)
        if not phrases:
            continue

        def fit(phrase: str, story: str = story) -> tuple[float, int]:
            score = related(phrase, story) if related else None
            # Two words say the most in the least: "your new job", "your dream car".
            return (score if score is not None else 0.0, -abs(len(phrase.split()) - 3))

        return Recall(session_id, age, max(phrases, key=fit))
    return None

"""Choosing the story to read: rank the unheard bank against the participant's story.

`Matcher` is the small interface; `LexicalMatcher` is the dependency-free
fallback (word overlap). The on-device model provides the empathic matcher.
`choose_story` applies the protocol's condition and never repeats a story.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from companion.engine.stories import Story


@dataclass(frozen=True)
class Ranked:
    story: Story
    score: float
    components: Mapping[str, Any] = field(default_factory=dict)  # JSON-able, logged


class Matcher(Protocol):
    name: str

    def rank(self, query: str, candidates: Sequence[Story]) -> Sequence[Ranked]:
        """All candidates (or all it can rank), best match first; may build entries lazily."""


@dataclass(frozen=True)
class Exposure:
    story: Story
    condition: str  # "matched" or "random": what the participant actually got
    score: float
    rank: int  # 1-based rank of the chosen story in the matcher's ranking
    components: Mapping[str, Any]


_WORD = re.compile(r"[a-z']+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "i",
        "i'm",
        "in",
        "is",
        "it",
        "its",
        "it's",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
        "just",
        "about",
        "very",
        "really",
        "all",
        "been",
        "did",
        "do",
        "not",
        "no",
        "one",
        "out",
        "up",
        "would",
        "could",
        "can",
        "than",
        "too",
        "also",
        "into",
        "over",
        "after",
        "before",
        "some",
    ]
)


def _terms(text: str) -> Counter[str]:
    return Counter(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2)


class LexicalMatcher:
    """Cosine similarity of content-word counts, idf-weighted over the candidates."""

    name = "lexical"

    def rank(self, query: str, candidates: Sequence[Story]) -> list[Ranked]:
        docs = [_terms(f"{s.title} {s.text}") for s in candidates]
        df: Counter[str] = Counter(t for d in docs for t in d)
        n = len(docs) or 1

        def vector(terms: Counter[str]) -> dict[str, float]:
            return {t: c * math.log(1 + n / (1 + df[t])) for t, c in terms.items()}

        q = vector(_terms(query))
        q_norm = math.sqrt(sum(v * v for v in q.values())) or 1.0
        ranked = []
        for story, doc in zip(candidates, docs, strict=True):
            d = vector(doc)
            d_norm = math.sqrt(sum(v * v for v in d.values())) or 1.0
            score = sum(w * d.get(t, 0.0) for t, w in q.items()) / (q_norm * d_norm)
            ranked.append(Ranked(story, round(score, 6), {"lexical": round(score, 6)}))
        # Ties broken by id so the ranking is deterministic.
        return sorted(ranked, key=lambda r: (-r.score, r.story.id))


def effective_condition(condition: str, session_index: int, participant_seed: int) -> str:
    """The condition for this session. Counterbalanced alternates, starting side seeded."""
    if condition != "counterbalanced":
        return condition
    first_matched = participant_seed % 2 == 0
    return "matched" if (session_index % 2 == 0) == first_matched else "random"


def choose_story(
    condition: str,
    query: str,
    candidates: Sequence[Story],
    matcher: Matcher,
    rng: random.Random,
) -> Exposure | None:
    """Pick one of `candidates` (already excluding heard stories). None if none left."""
    if not candidates:
        return None
    ranking = matcher.rank(query, candidates)
    if condition == "matched":
        position = 0
    elif condition == "random":
        position = rng.randrange(len(ranking))
    else:
        raise ValueError(f"condition must be matched or random, got {condition!r}")
    chosen = ranking[position]
    return Exposure(chosen.story, condition, chosen.score, position + 1, dict(chosen.components))

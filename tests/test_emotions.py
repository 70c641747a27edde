"""The one emotion-family map: complete, disjoint, and used by both of its readers."""

from __future__ import annotations

import random

import numpy as np

from companion.emotions import EMOTIONS, FAMILIES, FAMILY_NAMES, family_of
from companion.engine.acknowledge import acknowledgement, shipped_phrases
from companion.engine.variety import PhraseMemory
from companion.model.personalize import FAMILY_OF


def test_every_emotion_is_in_exactly_one_family() -> None:
    members = [e for group in FAMILIES.values() for e in group]
    assert sorted(members) == sorted(EMOTIONS)
    assert len(members) == len(set(members))


def test_acknowledgements_and_the_preference_model_share_the_families() -> None:
    assert set(shipped_phrases().named) == set(FAMILIES)
    for i, emotion in enumerate(EMOTIONS):
        assert FAMILY_NAMES[int(FAMILY_OF[i])] == family_of(emotion)


def test_a_feeling_named_exactly_uses_its_familys_phrasing() -> None:
    rule = {"exact": 0.5}
    for emotion in EMOTIONS:
        probs = dict.fromkeys(EMOTIONS, 0.0) | {emotion: 0.9}
        phrase = acknowledgement(probs, PhraseMemory(), random.Random(0), rule)
        assert shipped_phrases().feeling_words[emotion] in phrase, (emotion, phrase)
        family = family_of(emotion)
        assert family is not None
        templates = [t.split("{feeling}")[0] for t in shipped_phrases().named[family]]
        assert any(phrase.startswith(t) for t in templates), (emotion, phrase)
    assert np.unique(FAMILY_OF).size == len(FAMILIES)

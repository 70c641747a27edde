"""The 32 EmpatheticDialogues emotions, their one grouping into families, and their valence.

The families are the preference model's features (`model.personalize`) and decide how
an acknowledgement names a feeling (`engine.acknowledge`); both use this map. The valence
groups are the acknowledgement's broadest naming level ("That sounds really hard.").
"""

EMOTIONS: tuple[str, ...] = (
    "surprised", "excited", "annoyed", "proud", "angry", "sad", "grateful", "lonely",
    "impressed", "afraid", "disgusted", "confident", "terrified", "hopeful", "anxious",
    "disappointed", "joyful", "prepared", "guilty", "furious", "nostalgic", "jealous",
    "anticipating", "embarrassed", "content", "devastated", "sentimental", "caring",
    "trusting", "ashamed", "apprehensive", "faithful",
)  # fmt: skip

EMOTION_INDEX: dict[str, int] = {name: i for i, name in enumerate(EMOTIONS)}

# Every emotion in exactly one family (checked by tests/test_emotions.py). The order is part
# of the stored preference models' feature layout: append, never reorder.
FAMILIES: dict[str, tuple[str, ...]] = {
    "joy": ("excited", "proud", "grateful", "impressed", "confident", "joyful", "content"),
    "tender": ("caring", "trusting", "faithful", "sentimental", "nostalgic"),
    "anticipation": ("surprised", "hopeful", "anticipating", "prepared"),
    "sadness": ("sad", "lonely", "disappointed", "devastated"),
    "fear": ("afraid", "terrified", "anxious", "apprehensive"),
    "anger": ("annoyed", "angry", "furious", "disgusted", "jealous"),
    "shame": ("guilty", "embarrassed", "ashamed"),
}
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILIES)
FAMILY_OF: dict[str, str] = {e: fam for fam, members in FAMILIES.items() for e in members}


def family_of(emotion: str) -> str | None:
    return FAMILY_OF.get(emotion)


# Valence: the broadest honest naming level. An emotion belongs here only when every story of it
# is clearly pleasant or clearly painful to live through; ambiguous ones (surprised, nostalgic,
# sentimental, caring, trusting, faithful, prepared: EmpatheticDialogues has both kinds of story
# for each) belong to no group, so a valence phrase is never said for them on purpose.
VALENCE: dict[str, tuple[str, ...]] = {
    "positive": FAMILIES["joy"] + ("hopeful", "anticipating"),
    "negative": FAMILIES["sadness"] + FAMILIES["fear"] + FAMILIES["anger"] + FAMILIES["shame"],
}
VALENCE_OF: dict[str, str] = {e: v for v, members in VALENCE.items() for e in members}


def valence_of(emotion: str) -> str | None:
    return VALENCE_OF.get(emotion)

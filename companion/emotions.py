"""The 32 EmpatheticDialogues emotions and the one grouping of them into families.

The families are the preference model's features (`model.personalize`) and decide how
an acknowledgement names a feeling (`engine.acknowledge`); both use this map.
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

"""The 32 EmpatheticDialogues emotion labels, in the dataset's label order (1..32)."""

EMOTIONS: tuple[str, ...] = (
    "surprised", "excited", "annoyed", "proud", "angry", "sad", "grateful", "lonely",
    "impressed", "afraid", "disgusted", "confident", "terrified", "hopeful", "anxious",
    "disappointed", "joyful", "prepared", "guilty", "furious", "nostalgic", "jealous",
    "anticipating", "embarrassed", "content", "devastated", "sentimental", "caring",
    "trusting", "ashamed", "apprehensive", "faithful",
)  # fmt: skip

EMOTION_INDEX: dict[str, int] = {name: i for i, name in enumerate(EMOTIONS)}

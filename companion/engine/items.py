"""What a protocol item accepts: which hint is said when an answer is unclear (its wording is
the protocol's), the words a grammar recogniser listens for, and the parser that turns what was
heard into an answer (pure)."""

from __future__ import annotations

from companion.engine import answers
from companion.engine.protocol import Item


def hint_for(item: Item) -> tuple[str, dict[str, str]]:
    """The protocol prompt saying how to answer `item` (hint_likert, hint_yesno or hint_text,
    by its type) and the values of its placeholders."""
    if item.type == "likert":
        low, high = (answers.NUMBER_NAMES[n] for n in (item.min, item.max))
        return "hint_likert", {"low": low, "high": high}
    return f"hint_{item.type}", {}


# Spoken yes/no forms a recogniser's dictionary knows (no apostrophe-less spellings).
SPOKEN_YES_NO = ("yes", "yeah", "yep", "sure", "of course", "correct", "that's right", "no",
                 "nope", "not really", "no it isn't")  # fmt: skip


def vocabulary_for(item: Item) -> tuple[str, ...]:
    """Words and phrases a grammar recognizer should accept for this item."""
    commands = ("skip", "repeat", "repeat that", "say that again", "pass")
    if item.type == "likert":
        numbers = [w for w, n in answers.NUMBER_WORDS.items() if item.min <= n <= item.max]
        return (*numbers, *(item.anchors or {}).values(), *commands)
    if item.type == "yesno":
        return (*SPOKEN_YES_NO, *commands)
    return ()


def parse_item(item: Item, text: str) -> answers.Answer:
    if item.type == "likert":
        return answers.parse_scale(text, item.min, item.max, item.anchors)
    if item.type == "yesno":
        return answers.parse_yes_no(text)
    return answers.parse_free_text(text)

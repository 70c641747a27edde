"""What a protocol item accepts: which hint is said when an answer is unclear (its wording is
the protocol's), the words a grammar recogniser listens for, and the parser that turns what was
heard into an answer (pure), all with the protocol's [answers] words."""

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


def vocabulary_for(item: Item, words: answers.AnswerWords) -> tuple[str, ...]:
    """Words and phrases a grammar recognizer should accept for this item."""
    if item.type == "likert":
        numbers = [w for w, n in answers.NUMBER_WORDS.items() if item.min <= n <= item.max]
        return (
            *numbers,
            *words.spoken_forms(numbers),
            *(item.anchors or {}).values(),
            *words.spoken_commands,
        )
    if item.type == "yesno":
        return (*words.spoken_yes_no, *words.spoken_commands)
    return ()


def parse_item(item: Item, text: str, words: answers.AnswerWords) -> answers.Answer:
    if item.type == "likert":
        return answers.parse_scale(text, item.min, item.max, item.anchors, words=words)
    if item.type == "yesno":
        return answers.parse_yes_no(text, words=words)
    return answers.parse_free_text(text, words=words)

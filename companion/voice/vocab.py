"""Does a recogniser know the protocol's answer words? One pure check for doctor and install-asr.

A grammar can only contain words the recogniser's lexicon has. A model for another language
knows none of them, and a rating question would have nothing to listen for, so doctor fails
and the session refuses to listen rather than fall back to free recognition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from companion.engine import answers
from companion.engine.items import vocabulary_for
from companion.engine.protocol import Protocol


def answer_vocabularies(protocol: Protocol) -> dict[str, tuple[str, ...]]:
    """Every grammar a session of this protocol listens with, by item (and the read-back)."""
    out = {
        f"{inst.id}.{item.id}": vocabulary_for(item, protocol.answer_words)
        for inst in protocol.instruments
        for item in inst.items
        if item.type != "text"
    }
    out["confirm"] = protocol.answer_words.spoken_yes_no
    return out


@dataclass(frozen=True)
class VocabularyCheck:
    missing: tuple[str, ...]  # answer words the recogniser does not know
    unusable: tuple[str, ...]  # items with a possible answer the recogniser cannot hear

    @property
    def ok(self) -> bool:
        return not self.unusable

    def summary(self) -> str:
        if not self.missing:
            return "knows every answer word of the protocol"
        words = ", ".join(self.missing[:12]) + (" ..." if len(self.missing) > 12 else "")
        if self.unusable:
            items = ", ".join(self.unusable[:6]) + (" ..." if len(self.unusable) > 6 else "")
            return (f"cannot hear every answer to {items} (wrong language?); unknown answer "
                    f"words: {words}")  # fmt: skip
        return f"unknown answer words (those phrases are left out of the grammar): {words}"


def check_vocabulary(knows: Callable[[str], bool], protocol: Protocol) -> VocabularyCheck:
    """Which answer words are unknown, and which items lose a whole answer because of them."""
    known: dict[str, bool] = {}
    words = protocol.answer_words

    def heard(phrase: str) -> bool:
        said = phrase.lower().split()
        for w in said:
            if w not in known:
                known[w] = bool(knows(w))
        return bool(said) and all(known[w] for w in said)

    unusable = []
    for purpose, vocab in answer_vocabularies(protocol).items():
        inst_id, _, item_id = purpose.partition(".")
        item = next((i for inst in protocol.instruments if inst.id == inst_id
                     for i in inst.items if i.id == item_id), None)  # fmt: skip
        if item is not None and item.type == "likert":
            anchors = item.anchors or {}
            ok = all(heard(answers.NUMBER_NAMES[n]) or (n in anchors and heard(anchors[n]))
                     for n in range(item.min, item.max + 1))  # fmt: skip
        else:  # yes/no: both a yes and a no must be sayable
            ok = any(heard(p) for p in vocab if answers.parse_yes_no(p, words=words).value == 1)
            ok = ok and any(
                heard(p) for p in vocab if answers.parse_yes_no(p, words=words).value == 0
            )
        if not ok:
            unusable.append(purpose)
        for p in vocab:
            heard(p)
    missing = tuple(sorted(w for w, k in known.items() if not k))
    return VocabularyCheck(missing, tuple(unusable))

"""When a spoken answer is read back before it is stored: one pure decision.

Reading every rating back ("I heard four. Is that right?") catches recognition errors but
doubles the turns of every session. So an answer is read back only when the recogniser is
unsure (its calibrated `asr_confidence` is below `THRESHOLD`), when it cannot say how sure
it is (no confidence), or when the heard phrase is one the answer corpus shows is often
heard in place of another (`CONFUSABLE`). The protocol can force every answer
(`confirm_voice_answers = "always"`) or none (`false`). Text answers are never read back.
Threshold and confusable phrases come from tests/bench/bench_answers.py on the corpus's
tuning voices; answers below voice.confidence.REJECT_BELOW never get here (not heard).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

Policy = Literal["always", "when_unsure", "never"]
POLICIES: tuple[Policy, ...] = ("always", "when_unsure", "never")

# Calibrated answer confidence below which an answer is read back, and heard phrases the
# corpus shows standing in for another answer above it, read back always. Chosen by leaving
# each tuning voice out (bench_answers.py --rescore RUN --calibrate): the confidence fitted
# on the other voices, the lowest threshold from which on no left-out voice stores a wrong
# value without a read-back. Every voice needs 0.96 (at 0.95 `en-us-nyc+f5` stores a wrong
# value); above 0.96 only "five" was heard wrong on the tuning voices (once), so it is read
# back always.
# A month-long voice the corpus has not heard is a left-out voice: lower thresholds that
# stored nothing on the voices they were chosen on stored wrong values on the next one.
THRESHOLD = 0.96
CONFUSABLE: frozenset[str] = frozenset({"five"})


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def needs_confirmation(policy: Policy, heard: str, confidence: float | None,
                       threshold: float = THRESHOLD) -> bool:  # fmt: skip
    """Should the answer recognised as `heard` be read back before it is stored?"""
    if policy == "never":
        return False
    if policy == "always" or confidence is None:
        return True
    return _norm(heard) in CONFUSABLE or confidence < threshold


def bench_policy() -> dict[str, Callable[[str, int, float | None, str], bool]]:
    """The policies the answer benchmark compares: (group, value, confidence, text) -> read back?"""

    def policy(p: Policy) -> Callable[[str, int, float | None, str], bool]:
        def decide(group: str, value: int, confidence: float | None, heard: str) -> bool:
            return needs_confirmation(p, heard, confidence)

        return decide

    return {p: policy(p) for p in POLICIES}

"""How sure is the recogniser of an answer? A calibrated probability that it heard right.

pocketsphinx's own segment posterior needs its lattice pass, which is too slow at the end
of a story, and without it every word scores 1.0. So an answer's confidence is a logistic
model over what the first pass already has (no audio here; the fitted numbers are read
once from their data file):
- `silence_share`: the share of the turn the best path spends in silence. Noise or other
  speech forced onto an answer word leaves little silence.
- `duration_fit`: -|log(frames per answer word / typical)|: a word stretched over a long
  stretch of noise, or squeezed into a click, is suspect.
- `stability`: the share of the running hypotheses, from the first word heard on, that
  already were the final answer (a word the decoder kept changing its mind about is
  suspect). It replaced the n-best agreement, whose lattice took ~0.3 s with wide beams.
- `acoustic_per_frame`: the answer words' acoustic score per frame (higher = better match).
- `snr_db`: the turn's speech-to-noise ratio (channels measures it, capped at 40 dB): in
  noise a forced answer is likelier wrong (on top of the channel's noise gate, which stays).
- `path_per_frame`: the whole best grammar path's acoustic score (silence and garbage
  included) per frame; each frame is scored against its best senone, so it is already a ratio
  against unconstrained sounds.
The weights are fitted on the spoken-answer corpus (tests/bench/bench_answers.py
--calibrate --write: the tuning voices; the benchmark reports ROC AUC on the held-out voices)
and shipped, with the bars below and the read-back rule fitted with them, in
companion/data/answer_confidence.json (`fitted()`), so the value is the corpus's probability
that the answer was heard right. Below `reject_below(snr)` (the fitted `reject_below` in a
noisy room, `reject_below_clean` in one at least `clean_from_db` clean: there a low score
comes from an unfamiliar voice, not from noise forced onto an answer, and the read-back
catches the wrong ones) an answer is treated as not heard (asked again) rather than read
back. vosk gives its own word posteriors (the mean over the answer's words is used).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass, fields, replace
from functools import lru_cache

from companion.engine.confirm import FIT_FILE, REFIT, AnswerFit, load_fit
from companion.errors import ConfigError

TYPICAL_WORD_FRAMES = 35.0  # ~0.35 s per answer word at 100 frames/s
SNR_CAP_DB = 40.0  # above this a room is as good as clean
CLEAN_SNR_DB = SNR_CAP_DB  # assumed when the recogniser alone scores an answer


@dataclass(frozen=True)
class Features:
    silence_share: float
    duration_fit: float
    stability: float
    acoustic_per_frame: float
    snr_db: float = CLEAN_SNR_DB
    # The whole path's score (log base 1.0001 per frame); 0 in runs saved before it.
    path_per_frame: float = 0.0


NAMES = tuple(f.name for f in fields(Features))


@lru_cache(maxsize=1)
def fitted() -> AnswerFit:
    """The shipped fit, checked against the features computed here (loaded once)."""
    return checked(load_fit(), f"companion/data/{FIT_FILE}")


def checked(fit: AnswerFit, source: str) -> AnswerFit:
    """`fit`, if it was fitted on these features in this order."""
    if fit.features != NAMES:
        raise ConfigError(f"{source}: 'features' must be {list(NAMES)} "
                          f"(fitted for {list(fit.features)}); {REFIT}")  # fmt: skip
    return fit


def reject_below(snr_db: float, noisy: float | None = None,
                 clean: float | None = None) -> float:  # fmt: skip
    """The confidence below which an answer heard at `snr_db` counts as not heard (the fitted
    bars unless given)."""
    fit = fitted()
    if snr_db >= fit.clean_from_db:
        return fit.reject_below_clean if clean is None else clean
    return fit.reject_below if noisy is None else noisy


def features(silence_frames: int, total_frames: int, word_frames: list[int],
             stable: int, partials: int, acoustic: float,
             snr_db: float = CLEAN_SNR_DB, path: float = 0.0) -> Features:  # fmt: skip
    """From the decoder's best path: frames in silence and in each answer word, how many of
    the running hypotheses were the answer, the answer words' and the whole path's total
    acoustic scores."""
    frames = max(1, sum(word_frames))
    per_word = frames / max(1, len(word_frames))
    return Features(
        silence_share=silence_frames / max(1, total_frames),
        duration_fit=-abs(math.log(per_word / TYPICAL_WORD_FRAMES)),
        stability=stable / max(1, partials),
        acoustic_per_frame=acoustic / frames,
        snr_db=_capped(snr_db),
        path_per_frame=path / max(1, total_frames),
    )


def _capped(snr_db: float) -> float:
    return max(0.0, min(SNR_CAP_DB, snr_db))


def with_snr(f: Features, snr_db: float) -> Features:
    return replace(f, snr_db=_capped(snr_db))


def probability(f: Features, weights: tuple[float, ...] | None = None,
                intercept: float | None = None) -> float:  # fmt: skip
    """The calibrated probability that the answer was heard right (the fitted model unless
    weights and intercept are given: the benchmark's refits)."""
    if weights is None or intercept is None:
        fit = fitted()
        weights = fit.weights if weights is None else weights
        intercept = fit.intercept if intercept is None else intercept
    z = intercept + sum(w * x for w, x in zip(weights, astuple(f), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

"""How sure is the recogniser of an answer? A calibrated probability that it heard right.

pocketsphinx's own segment posterior needs its lattice pass, which is too slow at the end
of a story, and without it every word scores 1.0. So an answer's confidence is a logistic
model over what the first pass already has (pure, no audio here):
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
- `loop_ratio`: (best grammar path - free phone loop) acoustic score per frame
  (`phoneloop`): how much worse the grammar explains the audio than any English phones.
The weights are fitted on the spoken-answer corpus (tests/bench/bench_answers.py
--calibrate: the tuning voices; the benchmark reports ROC AUC on the held-out voices), so
the value is the corpus's probability that the answer was heard right. Below
`reject_below(snr)` (`REJECT_BELOW` in a noisy room, `REJECT_BELOW_CLEAN` in a quiet one) an
answer is treated as not heard (asked again) rather than read back. vosk gives its own
word posteriors (the mean over the answer's words is used).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass, replace

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
    # Decoder-side scores (log base 1.0001 per frame); 0 in runs saved before them.
    path_per_frame: float = 0.0
    loop_ratio: float = 0.0


# Fitted by tests/bench/bench_answers.py --rescore RUN --states cold --calibrate on the cold
# run's 8 tuning voices, the extra ones included (intercept, then one per feature), without
# the phone loop (phoneloop.PHONE_LOOP is off: its weight is 0).
INTERCEPT = 3.9841
WEIGHTS = (-0.1957, 0.8953, 1.5794, 0.0450, -0.0220, 0.0505, 0.0)
# Answers less likely than this to be right are not heard at all (asked again): with the
# read-back threshold, the pair that stores no wrong value in the fewest turns on the
# tuning voices, cold (bench_answers.py --rescore --calibrate).
REJECT_BELOW = 0.7
# In a clean room (speech-to-noise at least CLEAN_FROM_DB) a low score comes from an
# unfamiliar voice, not from noise forced onto an answer, and rejecting it leaves clean
# speech unheard: there the bar is REJECT_BELOW_CLEAN (bench_answers.py --calibrate sweeps
# it on the tuning voices: any bar above 0 left clean answers unheard, and the read-back
# catches the wrong ones).
CLEAN_FROM_DB = 30.0
REJECT_BELOW_CLEAN = 0.0


def reject_below(snr_db: float, noisy: float = REJECT_BELOW,
                 clean: float = REJECT_BELOW_CLEAN) -> float:  # fmt: skip
    """The confidence below which an answer heard at `snr_db` counts as not heard."""
    return clean if snr_db >= CLEAN_FROM_DB else noisy


def features(silence_frames: int, total_frames: int, word_frames: list[int],
             stable: int, partials: int, acoustic: float,
             snr_db: float = CLEAN_SNR_DB, path: float = 0.0,
             loop: float | None = None) -> Features:  # fmt: skip
    """From the decoder's best path: frames in silence and in each answer word, how many of
    the running hypotheses were the answer, the answer words' total acoustic score, the whole
    path's acoustic score and the phone loop's on the same frames (None: no phone loop)."""
    frames = max(1, sum(word_frames))
    per_word = frames / max(1, len(word_frames))
    return Features(
        silence_share=silence_frames / max(1, total_frames),
        duration_fit=-abs(math.log(per_word / TYPICAL_WORD_FRAMES)),
        stability=stable / max(1, partials),
        acoustic_per_frame=acoustic / frames,
        snr_db=_capped(snr_db),
        path_per_frame=path / max(1, total_frames),
        loop_ratio=0.0 if loop is None else (path - loop) / max(1, total_frames),
    )


def _capped(snr_db: float) -> float:
    return max(0.0, min(SNR_CAP_DB, snr_db))


def with_snr(f: Features, snr_db: float) -> Features:
    return replace(f, snr_db=_capped(snr_db))


def probability(f: Features, weights: tuple[float, ...] = WEIGHTS,
                intercept: float = INTERCEPT) -> float:  # fmt: skip
    z = intercept + sum(w * x for w, x in zip(weights, astuple(f), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

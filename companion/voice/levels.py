"""Speech-to-noise of one turn, from per-frame power and the VAD's decisions (no audio I/O)."""

from __future__ import annotations

import numpy as np

# The quietest a microphone's noise floor is taken to be (-65 dBFS): a near-silent room
# or digital silence would otherwise make clean speech look like noise.
MIN_NOISE_POWER = (32768 * 10 ** (-65 / 20)) ** 2


class Levels:
    """Speech-to-noise estimate for one turn: voiced frames vs the noise floor.

    The floor is the quietest tenth of the unvoiced frames; in loud noise, where the VAD
    calls almost every frame speech, of all frames. Digital silence is no floor (clean
    speech would be compared with itself), and the floor is never below `MIN_NOISE_POWER`.
    """

    def __init__(self) -> None:
        self.powers: list[float] = []
        self.voiced: list[bool] = []

    def add(self, frame: bytes, voiced: bool) -> None:
        x = np.frombuffer(frame, dtype=np.int16).astype(np.float64)
        self.powers.append(float(np.mean(x * x)))
        self.voiced.append(voiced)

    def snr_db(self, onset: int = 0) -> float:
        """`onset`: index of the frame where speech started."""
        p = np.array(self.powers)
        v = np.array(self.voiced, dtype=bool)
        if not v.any():
            return 0.0
        silent = p <= 1.0  # digital silence: gated input, padding, a synthesised room
        before = np.arange(p.size) < onset  # the room before the participant spoke
        quiet = p[(before | ~v) & ~silent]
        if quiet.size >= 5:  # a real floor before or between the words
            noise = float(np.percentile(quiet, 10))
        elif onset > 0 and silent[:onset].all():  # digital silence before the speech
            noise = 0.0
        else:  # loud noise: the VAD calls every frame speech
            noise = float(np.percentile(p[~silent], 10)) if (~silent).any() else 0.0
        noise = max(noise, MIN_NOISE_POWER)
        return float(10 * np.log10(max(float(p[v].mean()), 1.0) / noise))

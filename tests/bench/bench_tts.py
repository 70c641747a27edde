"""Speech benchmark: the companion's two engines (piper, pyttsx3) as a session uses them.

    .venv/bin/python tests/bench/bench_tts.py [--stories 64] [--engines piper,pyttsx3]

Each engine runs in its own process (its memory alone), through the same code a session speaks
with (voice.tts.open_speaker, Speech.speak). Per engine:
- first audio: seconds from speak() to the first piece reaching the sink, for a short prompt
  and a long one (a story's opening), median of 5;
- stalls: a story opening played in real time (the sink sleeps for each piece's length),
  seconds the listener waits beyond the first audio (0 = each piece was ready in time);
- real-time factor: rendering seconds per second of speech, over the stories' pieces;
- RSS after loading the engine, with the ONNX empathy model loaded too, and the peak;
- word error rate of pocketsphinx (free recognition) on the shipped stories
  (companion/data/stories.jsonl) spoken by the engine, piece by piece.
Goals: piper WER <= 0.30, first audio <= 0.3 s, RTF <= 0.15; RSS against docs/platforms.md.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

from tests.bench.machine import cpu_line

REPO = Path(__file__).resolve().parents[2]

SHORT = "Let's start with how you're feeling right now."
GOALS = {"first_audio_s": 0.3, "rtf": 0.15, "wer_piper": 0.30}


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stories(n: int) -> list[str]:
    text = resources.files("companion.data").joinpath("stories.jsonl").read_text("utf-8")
    return [json.loads(line)["text"] for line in text.splitlines() if line.strip()][:n]


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]+", " ", text.lower().replace("-", " ")).split()


class TimedSink:
    """Notes when the first piece arrives; with `realtime`, plays as long as the audio lasts."""

    def __init__(self, realtime: bool = False) -> None:
        self.realtime = realtime
        self.first: float | None = None

    def play(self, pcm: bytes, sample_rate: int) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        if self.realtime:
            time.sleep(len(pcm) / 2 / sample_rate)

    def close(self) -> None:
        pass


def child(engine: str, n: int) -> None:
    from companion.voice.audio import resample
    from companion.voice.listen import PocketsphinxFactory
    from companion.voice.speak import SpeakerSettings
    from companion.voice.tts import open_speaker

    base = rss_mb()
    t0 = time.perf_counter()
    speaker = open_speaker(SpeakerSettings(engine=engine))
    out: dict[str, object] = {"engine": speaker.describe(), "load_s": time.perf_counter() - t0}
    out["rss_loaded_mb"] = rss_mb()
    out["rss_python_mb"] = base
    texts = stories(n)
    opening = " ".join(re.split(r"(?<=[.!?])\s+", stories(1)[0])[:4])
    for name, prompt in (("short", SHORT), ("long", opening)):
        times = []
        for _ in range(5):
            sink = TimedSink()
            speaker.sink = sink
            start = time.perf_counter()
            speaker.speak(prompt)
            assert sink.first is not None
            times.append(sink.first - start)
        out[f"first_audio_{name}_s"] = statistics.median(times)
    sink = TimedSink(realtime=True)
    speaker.sink = sink
    start = time.perf_counter()
    seconds = speaker.speak(opening)
    assert sink.first is not None
    out["stall_s"] = max(0.0, time.perf_counter() - start - seconds - (sink.first - start))
    out["opening_audio_s"] = seconds
    render = 0.0
    spoken: list[tuple[str, bytes, int]] = []
    for story in texts:
        for piece in speaker.pieces(story):
            t = time.perf_counter()
            pcm, rate = speaker.render_pcm(piece.text)
            render += time.perf_counter() - t
            spoken.append((piece.text, pcm, rate))
    audio = sum(len(pcm) / 2 / rate for _, pcm, rate in spoken)
    out["rss_spoken_mb"] = rss_mb()  # the engine after speaking the stories (its arena grown)
    from tests.helpers.speech import word_edits

    sphinx = PocketsphinxFactory()
    errors = total = 0
    for text, pcm, rate in spoken:
        rec = sphinx.create("free")
        pcm16 = bytes(9600) + resample(pcm, rate) + bytes(19200)
        for i in range(0, len(pcm16), 960):
            rec.accept(pcm16[i : i + 960])
        ref = words(text)
        errors += word_edits(ref, rec.final().text.split())
        total += len(ref)
    del spoken
    out.update(rtf=render / audio, stories=len(texts), words=total, wer=errors / total,
               speech_s=audio)  # fmt: skip
    out["rss_with_asr_mb"] = rss_mb()
    from companion.model.encode import Encoder

    encoder = Encoder.load()
    encoder.encode(texts[0][:200])
    out["rss_with_model_mb"] = rss_mb()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    speaker.close()
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stories", type=int, default=64, help="how many of the 64 stories (WER, RTF)")
    ap.add_argument("--engines", default="piper,pyttsx3")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.stories)
        return
    print(cpu_line())
    print(f"stories: {args.stories}; goals: first audio <= {GOALS['first_audio_s']} s, "
          f"RTF <= {GOALS['rtf']}, piper WER <= {GOALS['wer_piper']}")  # fmt: skip
    for engine in args.engines.split(","):
        done = subprocess.run(
            [sys.executable, __file__, "--child", engine, "--stories", str(args.stories)],
            capture_output=True, text=True, cwd=REPO, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            print(f"{engine}: failed\n{done.stderr[-2000:]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"\n{r['engine']}: loaded in {r['load_s']:.2f} s")
        print(f"  first audio: short prompt {r['first_audio_short_s']:.3f} s, long prompt "
              f"{r['first_audio_long_s']:.3f} s; stalls in a {r['opening_audio_s']:.0f} s "
              f"opening played in real time: {r['stall_s']:.2f} s")  # fmt: skip
        print(f"  real-time factor {r['rtf']:.3f} ({r['speech_s']:.0f} s of speech); "
              f"WER {r['wer']:.3f} on {r['stories']} stories ({r['words']} words)")  # fmt: skip
        print(f"  RSS: python {r['rss_python_mb']:.0f} MB, engine loaded "
              f"{r['rss_loaded_mb']:.0f} MB, after speaking the stories {r['rss_spoken_mb']:.0f} "
              f"MB, + pocketsphinx {r['rss_with_asr_mb']:.0f} MB, "
              f"+ empathy model {r['rss_with_model_mb']:.0f} MB; peak "
              f"{r['peak_rss_mb']:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()

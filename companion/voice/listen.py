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
from companion.voice import confidence
from companion.voice.backend import choose_backend
from companion.voice.confidence import Features

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
Mode = Literal["grammar", "free"]
UNKNOWN = "[unk]"

# Competing words for the pocketsphinx grammar: out-of-vocabulary numbers, so speech outside
# the answer set lands here instead of on an answer. Short words only: the long ones
# ("morning", "eleven", "twelve", "yesterday", ...) took clean "one" and "four" said slowly
# (tuning voices: 6.7 % of clean answers not heard with them, 0 % without), and "nine" took
# "five" once the recogniser had adapted (warm: 5.6 -> 1.1 %). Catch-alls like "hello",
# "really", "probably" took clean "one", "four", "five" too.
_GARBAGE_WORDS = "zero one two three four five six eight ten".split()  # noqa: SIM905
# Prior weight of the garbage path against the answers (a JSGF weight); a weight of 1e-4
# or 1e-8 changed little on the tuning voices: the acoustic match decides.
GARBAGE_WEIGHT = 1.0


@dataclass(frozen=True)
class Word:
    text: str
    start_s: float
    end_s: float
    confidence: float | None  # None: the backend has no calibrated confidence here


@dataclass(frozen=True)
class Partial:
    text: str


@dataclass(frozen=True)
class Transcript:
    text: str
    words: tuple[Word, ...]
    confidence: float | None
    # What the confidence was computed from (pocketsphinx answers), so the channel can add
    # the turn's speech-to-noise ratio.
    features: Features | None = None

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

    def create(self, mode: Mode, vocabulary: tuple[str, ...] = (),
               hedges: tuple[str, ...] = ()) -> Recognizer:
        """A recognizer for one turn; in grammar mode it hears `vocabulary`, and `hedges` as
        themselves where the backend can tell them apart."""

    def knows(self, word: str) -> bool:
        """Is the word in the recogniser's lexicon (can a grammar use it)?"""


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


def _no_grammar(backend: str, vocabulary: tuple[str, ...]) -> ModelError:
    # Free recognition would hear anything as anything: never a fallback for an answer.
    shown = ", ".join(list(dict.fromkeys(vocabulary))[:6])
    return ModelError(f"{backend}: the speech model knows none of the answer words ({shown}); "
                      "install a model for the protocol's language (companion doctor)")  # fmt: skip


def _transcript(words: list[Word], conf: float | None,
                features: confidence.Features | None = None) -> Transcript:  # fmt: skip
    words = [w for w in words if w.text != UNKNOWN]
    if not words:
        return Transcript("", (), None)
    return Transcript(" ".join(w.text for w in words), tuple(words), conf, features)


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
        # vosk's own word posteriors (a grammar's words; a story's too): their mean.
        words = [w for w in self._words if w.text != UNKNOWN]
        conf = sum(w.confidence or 0.0 for w in words) / len(words) if words else None
        return _transcript(words, conf)


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

    def create(self, mode: Mode, vocabulary: tuple[str, ...] = (),
               hedges: tuple[str, ...] = ()) -> VoskRecognizer:
        if mode == "grammar":
            phrases = filter_vocabulary(vocabulary, self.knows, self.name)
            if self.knows(UNKNOWN):
                phrases.append(UNKNOWN)
            if len(phrases) == (UNKNOWN in phrases):
                raise _no_grammar(self.name, vocabulary)
            grammar = json.dumps(phrases, ensure_ascii=False)
            rec = self._vosk.KaldiRecognizer(self.model, SAMPLE_RATE, grammar)
        else:
            rec = self._vosk.KaldiRecognizer(self.model, SAMPLE_RATE)
        rec.SetWords(True)
        return VoskRecognizer(rec)


# --- pocketsphinx ---------------------------------------------------------------------


def build_jsgf(phrases: list[str], garbage: list[str],
               garbage_weight: float = GARBAGE_WEIGHT) -> str:  # fmt: skip
    """A JSGF grammar: exactly one answer phrase, or one garbage word."""
    answers = " | ".join(f"( {p} )" for p in phrases)
    lines = ["#JSGF V1.0;", "grammar answer;"]
    if garbage:
        lines.append("<garbage> = " + " | ".join(garbage) + ";")
        weight = f"/{garbage_weight:g}/ "
        lines.append(f"public <answer> = /1/ ( {answers} ) | {weight}<garbage>;")
    else:
        lines.append(f"public <answer> = {answers};")
    return "\n".join(lines) + "\n"


class PocketsphinxRecognizer:
    """One utterance on the factory's shared decoder (one live turn at a time)."""

    def __init__(self, decoder: Any, garbage: frozenset[str], frame_s: float,
                 grammar: bool, phrases: frozenset[str] = frozenset()) -> None:  # fmt: skip
        self._dec = decoder
        self.grammar = grammar
        self._phrases = phrases
        self.features: confidence.Features | None = None  # of the last answer, for calibration
        self._garbage = garbage
        self._frame_s = frame_s
        self._last = ""
        self._partials: list[str] = []
        self.open = False

    @property
    def phrases(self) -> frozenset[str]:
        """What this turn's grammar listens for (answers and the hedges kept beside them)."""
        return self._phrases

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
        raw = hyp.hypstr if hyp is not None else ""
        text = self._answer(raw)
        # For the confidence's stability: whole phrases (or garbage) only; a phrase's first
        # word on its way ("i" of "i don't know" while "five" is said) is no competitor.
        if raw and self.grammar and (not text or text in self._phrases):
            self._partials.append(text)
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
        silence = 0
        acoustic_sum = path = 0.0  # the answer words' acoustic score; the whole path's
        for seg in self._dec.seg():
            score = float(logmath.log(max(float(seg.ascore), 1e-300)))
            path += score
            if seg.word.startswith(("<", "[", "+")) or seg.word == "(NULL)":
                silence += max(0, seg.end_frame - seg.start_frame + 1) * seg.word.startswith("<")
                continue
            acoustic_sum += score
            words.append(Word(self._clean(seg.word), seg.start_frame * self._frame_s,
                              (seg.end_frame + 1) * self._frame_s, None))  # fmt: skip
        answer = [w for w in words if w.text != UNKNOWN]
        if not self.grammar or not answer:
            # Free recognition has no calibrated confidence (NULL), garbage no answer.
            return _transcript([Word(w.text, w.start_s, w.end_s, None) for w in answer], None)
        text = " ".join(w.text for w in answer)
        feats = confidence.features(
            silence, max(1, int(self._dec.n_frames())),
            [round((w.end_s - w.start_s) / self._frame_s) for w in answer],
            sum(t == text for t in self._partials), len(self._partials), acoustic_sum,
            path=path,
        )  # fmt: skip
        self.features = feats
        conf = confidence.probability(feats)
        return _transcript([Word(w.text, w.start_s, w.end_s, conf) for w in answer], conf, feats)

    def _answer(self, hypstr: str) -> str:
        return " ".join(w for w in (self._clean(t) for t in hypstr.split()) if w != UNKNOWN)


BEAMS = {"beam": 1e-80, "pbeam": 1e-80, "wbeam": 1e-60}


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
        # Wide beams for the answer grammars only (a search reads them when it is added;
        # the story search keeps the defaults): the default beams prune the right word of
        # a short answer in noise or an unfamiliar voice (tuning voices: heard right 47 ->
        # 55 %, not heard 27 -> 20 %).
        for key, value in BEAMS.items():
            self._dec.config[key] = value
        self._frame_s = 1.0 / float(self._dec.config["frate"])
        self._prior_cmn = str(self._dec.get_cmn(False))  # what a fresh decoder starts from
        self._n = 0
        self._grammar: str | None = None
        self._current: PocketsphinxRecognizer | None = None

    def knows(self, word: str) -> bool:
        return self._dec.lookup_word(word) is not None

    # Channel normalisation (the cepstral mean) adapts to the room and microphone over a
    # session; a fresh decoder starts from a generic prior and mishears its first answers.
    # The channel saves it per device at the end of a session and restores it at the start.
    @property
    def adaptation(self) -> str:
        return str(self._dec.get_cmn(False))

    def adapt(self, state: str) -> bool:
        """Start from a saved channel normalisation; False (and unchanged) if it is unusable."""
        try:
            values = [float(v) for v in state.split(",")]
        except ValueError:
            return False
        if len(values) != len(self._prior_cmn.split(",")) or not 0.0 < values[0] < 200.0:
            return False
        self._dec.set_cmn(",".join(f"{v:g}" for v in values))
        return True

    def reset_adaptation(self) -> None:
        """Back to the state a fresh process starts in (the benchmark's cold state)."""
        self._dec.set_cmn(self._prior_cmn)

    def create(self, mode: Mode, vocabulary: tuple[str, ...] = (),
               hedges: tuple[str, ...] = ()) -> PocketsphinxRecognizer:
        if self._current is not None and self._current.open:
            # The previous turn was abandoned (no speech, device lost): close it.
            self._dec.end_utt()
            self._current.open = False
        garbage: list[str] = []
        phrases: list[str] = []
        if mode == "grammar":
            phrases = filter_vocabulary(vocabulary, self.knows, self.name)
            if phrases:
                phrases += [h for h in hedges if h not in phrases
                            and all(self.knows(w) for w in h.split())
                            and not self._sounds_like_an_answer(h, phrases)]  # fmt: skip
                used = {w for p in phrases for w in p.split()}
                garbage = [w for w in _GARBAGE_WORDS if w not in used and self.knows(w)]
                self._n += 1
                name = f"answer{self._n}"
                self._dec.add_jsgf_string(name, build_jsgf(phrases, garbage))
                self._dec.activate_search(name)
                self._drop_old_grammar(name)
            else:
                raise _no_grammar(self.name, vocabulary)
        else:
            self._dec.activate_search("_default")
        self._current = PocketsphinxRecognizer(
            self._dec, frozenset(garbage), self._frame_s, mode == "grammar", frozenset(phrases)
        )
        return self._current

    def _sounds_like_an_answer(self, hedge: str, phrases: list[str]) -> bool:
        # A hedge word said like an answer word ("know", "no") or a hedge starting with one
        # ("no idea") takes it: the read-back's "no" came out as "don't know" (asked again).
        answer_words = {w for p in phrases for w in p.split()}
        sounds = {self._dec.lookup_word(w) for w in answer_words}
        words = hedge.split()
        return words[0] in phrases or any(
            w not in answer_words and self._dec.lookup_word(w) in sounds for w in words)

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

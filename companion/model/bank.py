"""The story bank's encodings: computed when stories enter the bank, only read in a session.

`encode_bank` fills `story_embeddings` for every story the current model has not encoded yet
(the shipped bank's encodings are copied from the package, the rest are encoded), committing
every `chunk` stories so an interrupted import keeps what it encoded. `stored_encodings` is what
a session uses: it reads, never encodes, and reports which stories are not encoded yet.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sqlite_utils

from companion.clock import utc_now
from companion.emotions import EMOTIONS
from companion.engine.stories import Story, content_hash
from companion.model.encode import Encoder, TextEncoding, build_id
from companion.store import learning

log = logging.getLogger(__name__)

# (done, total) after each committed chunk; the CLI draws a progress bar from it.
Progress = Callable[[int, int], None]


class CachedEncoder:
    """Encodes each text once per session (the story is used for acknowledging and matching)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.version = build_id(encoder.version, encoder.meta)
        self._cache: dict[str, TextEncoding] = {}

    def encode(self, text: str) -> TextEncoding:
        if text not in self._cache:
            if len(self._cache) > 32:
                self._cache.clear()
            self._cache[text] = self.encoder.encode(text)
        return self._cache[text]

    def emotions(self, text: str) -> Mapping[str, float] | None:
        """The engine's `understand` hook: emotion probabilities of what the participant said."""
        if not text.strip():
            return None
        probs = self.encode(text).emotions
        return {name: float(p) for name, p in zip(EMOTIONS, probs, strict=True)}


TAG_WEIGHT = 0.5


def story_text(story: Story) -> str:
    """What the model encodes for a story (one definition for the bank, its cache, eval)."""
    return f"{story.title}. {story.text}"


def story_emotions(story: Story, predicted: np.ndarray) -> np.ndarray:
    """A story's emotion distribution: the model's, blended with its author-given tag.

    The head is trained on one-sentence situations; on 200-word stories its top-1
    agrees with our tags about half the time, so the tag (when present) anchors it.
    """
    probs = np.asarray(predicted, np.float32)
    if story.emotion in EMOTIONS:
        tag = np.zeros(len(EMOTIONS), np.float32)
        tag[EMOTIONS.index(story.emotion)] = 1.0
        probs = (1.0 - TAG_WEIGHT) * probs + TAG_WEIGHT * tag
    return probs.astype(np.float32)


def bank_cache_path(model_name: str) -> Path:
    return Path(__file__).resolve().parent.parent / "data" / f"bank-{model_name}.npz"


def write_bank_cache(encoder: Encoder, stories: Sequence[Story], path: Path) -> None:
    """Precompute the shipped bank's encodings so a new device needs no encoding at all."""
    encoded = [encoder.encode(story_text(s)) for s in stories]
    np.savez_compressed(
        path,
        model=np.array(CachedEncoder(encoder).version),
        ids=np.array([s.id for s in stories]),
        hashes=np.array([content_hash(s.text) for s in stories]),
        embeddings=np.stack([e.embedding for e in encoded]).astype(np.float32),
        emotions=np.stack([e.emotions for e in encoded]).astype(np.float32),
    )


def shipped_encodings(model_version: str) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    path = bank_cache_path(model_version.split("+")[0])
    if not path.exists():
        return {}
    with np.load(path) as data:
        if str(data["model"]) != model_version:
            log.warning("%s was built for another model; encoding the bank instead", path.name)
            return {}
        return {
            str(i): (str(h), e, m)
            for i, h, e, m in zip(
                data["ids"], data["hashes"], data["embeddings"], data["emotions"], strict=True
            )
        }


def encoded_ids(db: sqlite_utils.Database, model_version: str) -> set[str]:
    return learning.encoded_ids(db, model_version)


@dataclass(frozen=True)
class EncodeResult:
    version: str  # the model build the encodings belong to
    total: int  # stories in the bank
    encoded: int  # encoded by the model just now
    copied: int  # taken from the package's precomputed bank encodings
    seconds: float  # time spent encoding (not copying)

    @property
    def rate(self) -> float:
        return self.encoded / self.seconds if self.seconds > 0 else 0.0


def encode_bank(
    db: sqlite_utils.Database,
    encoder: CachedEncoder,
    stories: Sequence[Story],
    progress: Progress | None = None,
    chunk: int = 32,
    workers: int | None = None,
) -> EncodeResult:
    """Store encodings of every story in `stories` not yet encoded by this model.

    Shortest first, so progress moves steadily and a chunk's texts cost about the same. One ONNX
    call per text, not padded batches: the int8 graph quantizes activations per call, so a
    batch would make a story's encoding depend on its neighbours (measured: min cosine 0.975 to
    the single-text encoding, for 1.17x the speed). Texts are encoded on `workers` threads
    (default: one per usable core): each call runs single-threaded in its caller's thread, so
    the results are the same as one by one. Each chunk is committed on its own.
    """
    copied = copy_shipped(db, encoder.version, stories)
    done = encoded_ids(db, encoder.version)
    to_encode = sorted(
        (s for s in stories if s.id not in done), key=lambda s: (len(story_text(s)), s.id)
    )
    total, finished = len(stories), len(stories) - len(to_encode)
    if progress and to_encode:
        progress(finished, total)
    spent = 0.0
    with ThreadPoolExecutor(workers or bank_workers(encoder.encoder.threads)) as pool:
        for start in range(0, len(to_encode), chunk):
            part = to_encode[start : start + chunk]
            began = time.perf_counter()
            encoded = pool.map(lambda s: encoder.encoder.encode(story_text(s)), part)
            batch = list(zip(part, encoded, strict=True))
            spent += time.perf_counter() - began
            _store(db, encoder.version, batch)
            finished += len(part)
            if progress:  # after the commit: what it shows is kept if the process is killed
                progress(finished, total)
    if to_encode:
        log.info(
            "encoded %d stories (%.1f/s) for %s",
            len(to_encode), len(to_encode) / spent if spent else 0.0, encoder.version,
        )  # fmt: skip
    return EncodeResult(encoder.version, total, len(to_encode), copied, spent)


def bank_workers(threads_per_call: int = 1) -> int:
    """Encoding threads for the bank: the cores this process may use (a CPU affinity mask, as
    systemd's CPUAffinity= sets, counts), at most 4, divided by the model's own threads."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4) // max(1, threads_per_call))


def copy_shipped(db: sqlite_utils.Database, model_version: str, stories: Sequence[Story]) -> int:
    """Store the package's precomputed encodings of `stories` that lack one (no model call)."""
    done = encoded_ids(db, model_version)
    missing = [s for s in stories if s.id not in done]
    shipped = shipped_encodings(model_version) if missing else {}
    copied = [
        (s, TextEncoding(shipped[s.id][1], shipped[s.id][2]))
        for s in missing
        if s.id in shipped and shipped[s.id][0] == content_hash(s.text)
    ]
    _store(db, model_version, copied)
    return len(copied)


def _store(
    db: sqlite_utils.Database, version: str, encoded: Sequence[tuple[Story, TextEncoding]]
) -> None:
    learning.store_encodings(db, version, [
        (story.id, enc.embedding.astype(np.float32).tobytes(),
         story_emotions(story, enc.emotions).tobytes())
        for story, enc in encoded
    ], utc_now())  # fmt: skip


@dataclass(frozen=True)
class BankEncodings:
    """The encoded part of a candidate list, in candidate order, plus what was left out."""

    stories: list[Story]
    embeddings: np.ndarray  # (N, 384) float32
    emotions: np.ndarray  # (N, 32) float32, tag-blended
    words: np.ndarray  # (N,) word counts (stored with the story)
    unencoded: list[Story]


def stored_encodings(
    db: sqlite_utils.Database, model_version: str, stories: Sequence[Story]
) -> BankEncodings:
    """Read the stored encodings of `stories`; never encodes (a session must not stall)."""
    rows = learning.encodings(db, model_version)
    have = [s for s in stories if s.id in rows]
    dim, n_emo = 384, len(EMOTIONS)
    emb = np.frombuffer(b"".join(rows[s.id][0] for s in have), np.float32).reshape(-1, dim)
    emo = np.frombuffer(b"".join(rows[s.id][1] for s in have), np.float32).reshape(-1, n_emo)
    words = np.array([rows[s.id][2] for s in have], np.int64)
    return BankEncodings(have, emb, emo, words, [s for s in stories if s.id not in rows])

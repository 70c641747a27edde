"""Benchmark the story bank path: import encoding rate, the silence between the end of the
participant's story and the story introduction with a large bank, and long-turn encoding.

    .venv/bin/python tests/bench/bench_bank.py [--bank 10000] [--data situations_dev.csv]

- import rate: `encode_bank` (what `stories import` and `init` run) on 200 synthetic 60-120-word
  stories and, with --data, on the first 500 rows of an EmpatheticDialogues-format CSV with at
  least 20 words (situations: 20-60 words).
- gap: real text sessions in a home whose bank holds --bank stories. 300 are encoded by the
  model; the other encodings are copies of those with small noise (re-normalised), because
  encoding 10,000 stories takes minutes here and the ranking cost does not depend on the
  values. Measured from the moment the participant's last story line is heard to the moment
  the story introduction is said (it includes the acknowledgement said in between).
- long turn: encoding a 2,000-word participant turn.
Prints the CPU model and its int8 features with the numbers.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from companion import app  # noqa: E402
from companion.clock import iso, utc_now  # noqa: E402
from companion.engine.stories import Story, add_stories, load_stories  # noqa: E402
from companion.engine.textio import TextChannel  # noqa: E402
from companion.model.bank import bank_workers, encode_bank  # noqa: E402
from companion.model.empathy import EmpathicChooser  # noqa: E402
from companion.settings.config import Config, Home, write_config  # noqa: E402
from companion.store.db import transaction  # noqa: E402
from tests.bench.machine import cpu_line  # noqa: E402

SENTENCES = [
    "I walked to the market early this morning.", "My sister called me after many years.",
    "The bus was late and I stood in the cold rain.", "We planted tomatoes in the garden.",
    "I could not find my glasses anywhere.", "A stranger helped me carry the shopping home.",
    "The kettle broke just as the guests arrived.", "My grandson showed me his drawings.",
    "I felt nervous before the appointment.", "The dog next door barked all night.",
    "We laughed until our sides hurt.", "I missed my old friends from work.",
    "The doctor said the results were fine and I cried with relief.",
    "Our old car finally gave up on the motorway.", "I baked bread for the first time.",
]  # fmt: skip
PARTICIPANT = [
    "four", "two",
    "My old dog Biscuit died on Sunday. He was fourteen and I had him since I was a student.",
    "The house is so quiet now. I keep expecting to hear him at the door when I come home.",
    "That's all.", *["four"] * 7, "three",
]  # fmt: skip


def synthetic(n: int, lo: int, hi: int, seed: int, prefix: str) -> list[Story]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words: list[str] = []
        target = rng.randint(lo, hi)
        while len(words) < target:
            words += rng.choice(SENTENCES).split()
        out.append(Story(f"{prefix}{i}", f"Day {i}", f"On day {i} " + " ".join(words[:target])))
    return out


def fresh_home(root: Path, name: str) -> app.Opened:
    path = root / name
    write_config(Home(path), Config(participant_id="B1", participant_name="Sam"))
    return app.open_home(path, create=True)  # a new home, as `init` makes one


def import_rate(root: Path, data: Path | None) -> None:
    opened = fresh_home(root, "rate")
    chooser = app.story_chooser(opened)
    assert isinstance(chooser, EmpathicChooser)
    sets = [("synthetic 60-120 words", synthetic(200, 60, 120, 1, "syn-"))]
    if data:
        with data.open(newline="", encoding="utf-8") as f:
            rows = [r[1] for r in list(csv.reader(f))[1:] if len(r[1].split()) >= 20][:500]
        ed = [Story(f"ed-{i}", "Untitled", " ".join(t.split())) for i, t in enumerate(rows)]
        sets.append((f"{data.name} (>= 20 words)", ed))
    # One thread (as before) and the default (one per core) on the same stories, in one run.
    for label, stories in sets:
        add_stories(opened.db, stories, source="import:bench")
        words = statistics.mean(s.word_count for s in stories)
        for workers in (1, bank_workers(chooser.encoder.encoder.threads)):
            with opened.db.conn:
                opened.db.conn.executemany(
                    "DELETE FROM story_embeddings WHERE story_id = ?", [(s.id,) for s in stories]
                )
            result = encode_bank(opened.db, chooser.encoder, load_stories(opened.db),
                                 workers=workers)  # fmt: skip
            print(f"import encoding, {label}, {workers} thread(s): {result.encoded} stories "
                  f"(mean {words:.0f} words) in {result.seconds:.1f} s = "
                  f"{result.rate:.1f} stories/s")  # fmt: skip


class TimingChannel(TextChannel):
    def __init__(self, replies: list[str]) -> None:
        super().__init__(io.StringIO("".join(r + "\n" for r in replies)), io.StringIO())
        self.events: list[tuple[float, str, str]] = []

    def say(self, text: str) -> None:
        self.events.append((time.perf_counter(), "say", text))
        super().say(text)

    def listen(self, expect):  # type: ignore[no-untyped-def]
        heard = super().listen(expect)
        self.events.append((time.perf_counter(), "heard", heard.text))
        return heard


def gap(root: Path, size: int, sessions: int) -> None:
    opened = fresh_home(root, "gap")
    chooser = app.story_chooser(opened)
    assert isinstance(chooser, EmpathicChooser)
    stories = synthetic(size - 64, 80, 200, 2, "big-")
    add_stories(opened.db, stories, source="import:bench")
    encode_bank(opened.db, chooser.encoder, load_stories(opened.db)[: 64 + 300])
    real = opened.db.execute("SELECT embedding, emotions FROM story_embeddings").fetchall()
    have = {r[0] for r in opened.db.execute("SELECT story_id FROM story_embeddings")}
    rng = np.random.default_rng(0)
    now = iso(utc_now())
    with transaction(opened.db):
        for story in stories:
            if story.id in have:
                continue
            emb, emo = real[rng.integers(len(real))]
            e = np.frombuffer(emb, np.float32) + rng.normal(0, 0.02, 384).astype(np.float32)
            e /= np.linalg.norm(e)
            opened.db.execute(
                "INSERT INTO story_embeddings VALUES (?, ?, ?, ?, ?)",
                [story.id, chooser.encoder.version, e.astype(np.float32).tobytes(), emo, now],
            )
    n = opened.db.execute("SELECT COUNT(*) FROM story_embeddings").fetchone()[0]
    gaps = []
    for _ in range(sessions):
        channel = TimingChannel(PARTICIPANT)
        result = app.run_in_home(opened, channel)
        story = opened.db.execute(
            "SELECT s.text FROM stories s JOIN story_exposures e ON e.story_id = s.id "
            "WHERE e.session_id = ?", [result.session_id]).fetchone()[0]  # fmt: skip
        said = [i for i, e in enumerate(channel.events) if e[1] == "say"]
        intro = next(i for j, i in enumerate(said[:-1]) if channel.events[said[j + 1]][2] == story)
        end = max(i for i, e in enumerate(channel.events[:intro]) if e[1] == "heard")
        gaps.append(channel.events[intro][0] - channel.events[end][0])
    print(f"story end -> intro, {n} encoded stories, {sessions} sessions: "
          f"median {statistics.median(gaps):.3f} s, max {max(gaps):.3f} s")  # fmt: skip


def long_turn() -> None:
    from companion.model.encode import Encoder

    enc = Encoder.load()
    text = " ".join(synthetic(1, 2000, 2000, 3, "long-")[0].text.split()[:2000])
    enc.encode(text)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        enc.encode(text)
        times.append(time.perf_counter() - t)
    print(f"2,000-word turn: {enc.token_windows(text).shape[0]} windows, "
          f"median {statistics.median(times):.3f} s (1 thread)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    print(cpu_line())
    with tempfile.TemporaryDirectory() as tmp:
        import_rate(Path(tmp), args.data)
        long_turn()
        gap(Path(tmp), args.bank, args.sessions)


if __name__ == "__main__":
    main()

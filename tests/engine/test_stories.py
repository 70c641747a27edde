"""The story bank: shipped stories, import from CSV/JSONL, listing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from companion import app
from companion.emotions import EMOTIONS
from companion.engine.stories import bundled_stories, import_file
from companion.errors import StoryImportError
from companion.model.encode import model_build
from tests.helpers.run import run_cli

STORY_TEXT = " ".join(["This is a short test story about a walk by the sea."] * 4)


def test_shipped_bank() -> None:
    stories = bundled_stories()
    assert len(stories) >= 60
    assert len({s.id for s in stories}) == len(stories)
    assert len({s.title for s in stories}) == len(stories)
    for story in stories:
        assert 120 <= story.word_count <= 300, story.id
        assert story.emotion in EMOTIONS
    assert {s.emotion for s in stories} == set(EMOTIONS)


def test_import_jsonl_and_csv_skips_duplicates(tmp_path: Path, home: Path) -> None:
    jsonl = tmp_path / "extra.jsonl"
    jsonl.write_text(
        json.dumps({"title": "Sea walk", "text": STORY_TEXT, "emotion": "content"}) + "\n"
        + json.dumps({"title": "Sea walk again", "text": STORY_TEXT.upper()}) + "\n"
    )  # fmt: skip
    proc = run_cli("stories", "import", "--home", str(home), str(jsonl))
    assert proc.returncode == 0, proc.stderr
    assert "1 stories added, 1 duplicates skipped" in proc.stdout
    csv_file = tmp_path / "extra.csv"
    csv_file.write_text(
        'title,text,emotion,tags\n"Garden","' + STORY_TEXT.replace("sea", "garden")
        + '",hopeful,"garden; spring"\n'
    )  # fmt: skip
    assert (
        "1 stories added" in run_cli("stories", "import", "--home", str(home), str(csv_file)).stdout
    )
    assert (
        "0 stories added, 1 duplicates"
        in run_cli("stories", "import", "--home", str(home), str(csv_file)).stdout
    )
    listing = run_cli("stories", "list", "--home", str(home)).stdout.splitlines()
    assert len(listing) == len(bundled_stories()) + 2
    assert any(line.endswith("\tGarden") and "\thopeful\t" in line for line in listing)


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("bad.jsonl", '{"title": "A", "text": "' + STORY_TEXT + '"}\n{broken\n', "bad.jsonl:2"),
        ("notitle.jsonl", '{"text": "' + STORY_TEXT + '"}\n', "notitle.jsonl:1: title"),
        ("short.jsonl", '{"title": "A", "text": "too short"}\n', "short.jsonl:1: text"),
        ("emotion.jsonl", '{"title": "A", "emotion": "meh", "text": "' + STORY_TEXT + '"}\n',
         "emotion.jsonl:1: emotion"),
        ("header.csv", "name,body\nA,B\n", "header.csv:1"),
        ("row.csv", f'title,text\n"A","{STORY_TEXT}"\n"B"\n', "row.csv:3: text"),
        ("story.txt", "hello", "use .csv or .jsonl"),
    ],
)  # fmt: skip
def test_bad_story_files(tmp_path: Path, name: str, content: str, where: str) -> None:
    """Each malformed file: one line naming the file and line, and nothing imported."""
    opened = app.open_home(tmp_path / "home", create=True)
    file = tmp_path / name
    file.write_text(content)
    with pytest.raises(StoryImportError) as caught:
        import_file(opened.db, file)
    line = str(caught.value)
    assert "\n" not in line and str(file) in line and where in line, line
    assert opened.db["stories"].count == len(bundled_stories())  # nothing partially imported


def test_bad_story_file_through_the_cli(tmp_path: Path, home: Path) -> None:
    """The command turns the named error into one stderr line and exit code 2."""
    file = tmp_path / "row.csv"
    file.write_text(f'title,text\n"A","{STORY_TEXT}"\n"B"\n')
    proc = run_cli("stories", "import", "--home", str(home), str(file))
    assert proc.returncode == 2, proc.stdout
    line = proc.stderr.strip()
    assert "\n" not in line and "row.csv:3: text" in line, line
    listing = run_cli("stories", "list", "--home", str(home)).stdout.splitlines()
    assert len(listing) == len(bundled_stories())


def _synthetic_stories(n: int) -> list[dict[str, str]]:
    """n distinct stories of 25-60 words, from the team's own sentences."""
    import random

    parts = [
        "I walked to the market early this morning.",
        "My sister called me after many years.",
        "The bus was late and I stood in the cold rain.",
        "We planted tomatoes in the garden.",
        "I could not find my glasses anywhere.",
        "A stranger helped me carry the shopping home.",
        "The kettle broke just as the guests arrived.",
        "My grandson showed me his drawings.",
        "I felt nervous before the appointment.",
        "The dog next door barked all night.",
        "We laughed until our sides hurt.",
        "I missed my old friends from work.",
    ]
    rng = random.Random(7)
    texts = [" ".join([f"On day {i}", *rng.sample(parts, rng.randint(4, 8))]) for i in range(n)]
    return [{"title": f"Day {i}", "text": text} for i, text in enumerate(texts)]


def test_import_encodes_with_progress_and_a_killed_import_keeps_what_it_encoded(
    tmp_path: Path, home: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys

    from companion.store.db import open_db
    from tests.helpers.run import REPO

    file = tmp_path / "more.jsonl"
    file.write_text("".join(json.dumps(s) + "\n" for s in _synthetic_stories(160)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "stories", "import", "--home", str(home), str(file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != "COMPANION_HOME"},
    )  # fmt: skip
    assert proc.stderr is not None
    shown = 0
    for line in proc.stderr:  # progress lines: "encoding stories: done/total", after each commit
        if line.startswith("encoding stories: "):
            shown = int(line.split()[-1].split("/")[0])
            if shown >= 64 + 64:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert shown >= 64 + 64, "no progress shown before the import finished"
    db = open_db(home / "companion.db")
    assert db["stories"].count == 224  # the import itself is one transaction, done first
    kept = db["story_embeddings"].count
    assert 64 + 64 <= kept < 224  # every chunk shown as done survived the kill
    db.close()
    # Importing again adds nothing and finishes the encoding where the killed one stopped.
    again = run_cli("stories", "import", "--home", str(home), str(file))
    assert again.returncode == 0, again.stderr
    assert "0 stories added, 160 duplicates skipped" in again.stdout
    assert f"224 stories encoded for {model_build()}" in again.stdout
    assert f", {224 - kept} just now (" in again.stdout
    db = open_db(home / "companion.db")
    assert db["story_embeddings"].count == 224


def test_bank_encoded_on_several_threads_is_the_same_as_one_by_one(tmp_path: Path) -> None:
    """`stories import` encodes on one thread per core; a text's encoding must not depend on
    which thread ran it or what ran beside it (byte-equal to the sequential encodings)."""
    from companion.engine.stories import Story, add_stories, load_stories
    from companion.model.bank import CachedEncoder, encode_bank
    from companion.model.encode import Encoder
    from companion.store.db import migrate, open_db

    encoder = CachedEncoder(Encoder.load())
    stories = [Story(f"t-{i}", s["title"], s["text"]) for i, s in enumerate(_synthetic_stories(40))]
    stored = []
    for workers in (1, 3):
        db = open_db(tmp_path / f"w{workers}.db")
        migrate(db)
        add_stories(db, stories, source="import:test")
        result = encode_bank(db, encoder, [s for s in load_stories(db) if s.id.startswith("t-")],
                             chunk=7, workers=workers)  # fmt: skip
        assert result.encoded == 40
        stored.append(
            {r["story_id"]: (r["embedding"], r["emotions"]) for r in db["story_embeddings"].rows}
        )
        db.close()
    assert stored[0] == stored[1]

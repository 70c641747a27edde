"""A month with one participant: no wording loops, topics never repeat, and gentle memory of
earlier stories (on by default, off when the protocol says so, never a skipped story)."""

from __future__ import annotations

import random
from datetime import date
from pathlib import Path

import pytest

from companion.engine.protocol import default_protocol_text, load_protocol, parse_protocol
from companion.engine.recall import choose_recall, topic_phrases, when_band
from companion.engine.variety import PhraseMemory, Said
from companion.errors import ConfigError
from companion.research.export import ExportOptions, export_home
from tests.helpers.month import STORIES, repetitions, run_month


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory):
    """Thirty real daily sessions, fixed seed, recall on (the default)."""
    return run_month(tmp_path_factory.mktemp("month") / "home", days=30, seed=1)


def test_a_month_never_repeats_a_wording_within_the_window(month) -> None:
    window = month.protocol.avoid_repeat_days
    assert window == 7
    stats = repetitions(month, window)
    for kind, s in stats.items():
        assert s["session_repeats"] == 0, (kind, s)
        assert s["repeats"] == 0, (kind, s)  # every kind has enough wordings for a week
    assert stats["greeting"]["uses"] == 29 and stats["greeting"]["distinct"] >= 8
    assert stats["follow_up"]["distinct"] == len(month.protocol.follow_ups)
    assert stats["acknowledgement"]["uses"] >= 40


def test_topics_rotate_without_repeats_for_a_month(month) -> None:
    said = [t for (t,) in month.db.execute(
        "SELECT text FROM turns WHERE purpose = 'story_invitation' ORDER BY id")]  # fmt: skip
    topics = [next(t for t in month.protocol.topics if t in text) for text in said]
    assert len(topics) >= 20 and len(set(topics)) == len(topics)


def test_recall_refers_back_now_and_then_by_a_short_phrase_only(month) -> None:
    db = month.db
    recalls = list(db.execute(
        "SELECT t.session_id, t.text, e.detail FROM turns t JOIN events e ON "
        "e.session_id = t.session_id AND e.kind = 'story_recalled' WHERE t.purpose = 'story_recall'"
    ))  # fmt: skip
    assert 4 <= len(recalls) <= 12, recalls  # now and then: not never, not most days
    for session_id, text, earlier in recalls:
        earlier = int(earlier)
        assert earlier < session_id
        told = " ".join(t for (t,) in db.execute(
            "SELECT text FROM turns WHERE session_id = ? AND purpose = 'story' "
            "AND speaker = 'participant'", [earlier]))  # fmt: skip
        # never a skipped or declined story
        assert told.strip() and told.strip() != "skip"
        assert not db.execute("SELECT 1 FROM turns WHERE session_id = ? AND purpose = "
                              "'story_none'", [earlier]).fetchone()  # fmt: skip
        # the phrase is the participant's own "my ..." words, and nothing longer of the story
        phrase = next(p for p in topic_phrases(told) if p in text)
        assert len(phrase.split()) <= 4
        words = told.lower().split()
        longest_copy = max(
            n
            for n in range(1, len(words) + 1)
            if any(" ".join(words[i : i + n]) in text.lower() for i in range(len(words) - n + 1))
        )
        assert longest_copy <= 3, (text, told)
    # each earlier story is recalled at most once
    assert len({r[2] for r in recalls}) == len(recalls)


def test_recall_off_never_refers_back(tmp_path: Path) -> None:
    opened = run_month(tmp_path / "home", days=12, seed=1, recall=False)
    assert not opened.protocol.recall_earlier_stories
    assert not opened.db.execute(
        "SELECT 1 FROM turns WHERE purpose = 'story_recall'").fetchone()  # fmt: skip
    assert not opened.db.execute(
        "SELECT 1 FROM events WHERE kind = 'story_recalled'").fetchone()  # fmt: skip


def test_recall_turns_are_in_the_codebook_and_redacted_like_any_transcript(
    month, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    names = ("sister", "daughter", "grandson")  # stand-ins for names the researchers list
    options = ExportOptions(include_transcripts=True, deidentify=True, extra_names=names)
    export_home(month.home, out, options)
    codebook = next(out.rglob("codebook*")).read_text()
    assert "story_recall" in codebook and "story_recalled" in codebook
    turns = next(p for p in out.rglob("turns.csv")).read_text()
    recalled = [line for line in turns.splitlines() if "story_recall" in line]
    assert recalled and all("your sister" not in line and "your daughter" not in line
                            for line in recalled)  # fmt: skip
    assert any("[PERSON]" in line for line in recalled)


def test_each_acknowledgement_logs_the_level_it_named(month) -> None:
    """One `acknowledged` event per acknowledgement said, naming a level the rule has and, at
    the valence level, a phrase of that group (the researchers' record of what was named)."""
    shipped = month.protocol.acknowledgements

    db = month.db
    said = db.execute(
        "SELECT session_id, text FROM turns WHERE speaker = 'companion' AND "
        "purpose IN ('follow_up', 'acknowledgement') ORDER BY id"
    ).fetchall()
    logged = db.execute("SELECT session_id, detail FROM events WHERE kind = 'acknowledged' "
                        "ORDER BY id").fetchall()  # fmt: skip
    assert [s for s, _ in said] == [s for s, _ in logged] and len(said) >= 40
    levels = {d.split(":")[0] for _, d in logged}
    assert levels <= {"exact", "family", "valence", "neutral"} and len(levels) >= 2, levels
    for (_, text), (_, detail) in zip(said, logged, strict=True):
        level, _, label = detail.partition(":")
        if level == "valence":
            assert any(text.startswith(p) for p in shipped.valence[label]), text
        elif level == "family":
            assert any(text.startswith(p) for p in shipped.family[label]), text
        elif level == "neutral":
            assert any(text.startswith(p) for p in shipped.neutral), text


def test_topic_phrases_take_the_participants_my_words_and_stop_before_verbs_and_names() -> None:
    assert topic_phrases("My sister's move to Leeds went well.") == ["your sister's move"]
    assert topic_phrases("When my dog died, I felt lost.") == ["your dog"]
    assert topic_phrases("My friend Priya got married.") == ["your friend"]
    assert topic_phrases("I walked by my face.") == []  # not a topic
    assert topic_phrases("Nothing of mine here.") == []
    assert all("my" not in p.split()[1:] for s in STORIES for p in topic_phrases(s))


def test_choose_recall_spaces_recalls_and_skips_recalled_and_old_stories() -> None:
    today = date(2027, 3, 20)
    told = [(9, "2027-03-19", "My garden shed is finished."),
            (8, "2027-03-18", "My sister moved away."),
            (1, "2027-02-20", "My old school closed.")]  # fmt: skip
    picks = [choose_recall(today, told, [], random.Random(s)) for s in range(40)]
    chosen = [p for p in picks if p]
    assert 10 < len(chosen) < 40  # now and then
    assert {p.session_id for p in chosen} == {9} and chosen[0].days == 1
    assert chosen[0].memory == "your garden shed"
    # a recall two days ago: none today; story 9 already recalled: the next one
    assert not any(choose_recall(today, told, [("2027-03-18", 5)], random.Random(s))
                   for s in range(40))  # fmt: skip
    later = [choose_recall(today, told, [("2027-03-10", 9)], random.Random(s)) for s in range(40)]
    assert {p.session_id for p in later if p} == {8}
    when = load_protocol().recall_when
    assert [when_band(d) for d in (1, 2, 3, 4, 6, 7, 13, 14, 60)] == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert when[when_band(9)] == "Last week" and when[when_band(3)] == "A couple of days ago"


def test_memory_prefers_unsaid_wordings_then_the_stalest() -> None:
    wordings = ("Hello {name}.", "Hi {name}.", "Welcome, {name}.")
    memory = PhraseMemory([Said(1, "Hello Robin."), Said(9, "Hi Robin.")], avoid_days=7)
    assert memory.choose(wordings) == "Welcome, {name}."  # never said comes first
    memory.note("Welcome, Robin.")
    assert memory.choose(wordings) == "Hi {name}."  # 9 days ago is outside the window
    memory.note("Hi Robin.")
    assert memory.choose(wordings) == "Hello {name}."  # all said lately: the stalest
    assert memory.last_said("Welcome, {name}.") == 0


def test_protocol_memory_options_are_validated() -> None:
    text = default_protocol_text()
    off = text.replace("recall_earlier_stories = true", "recall_earlier_stories = false")
    assert not parse_protocol(off, "s.toml").recall_earlier_stories
    with pytest.raises(ConfigError, match="protocol.avoid_repeat_days"):
        parse_protocol(text.replace("avoid_repeat_days = 7", "avoid_repeat_days = -1"), "s.toml")
    with pytest.raises(ConfigError, match="alternatives.story_recall"):
        parse_protocol(text.replace("I remember you telling me about {memory}.",
                                    "I remember {topic}."), "s.toml")  # fmt: skip
    with pytest.raises(ConfigError, match="alternatives.greting"):
        parse_protocol(text.replace("[prompts.alternatives]\ngreeting",
                                    "[prompts.alternatives]\ngreting"), "s.toml")  # fmt: skip

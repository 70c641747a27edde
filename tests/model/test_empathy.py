"""Empathic matching in real sessions: the real ONNX model, real SQLite, exact replay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from companion import app
from companion.model.empathy import EmpathicChooser, replay_participant
from companion.model.encode import model_build
from companion.store.db import open_db
from tests.helpers.run import SCRIPT, run_cli, run_text_session

SAD_STORY = [
    "four",
    "two",
    "My old dog Biscuit died on Sunday. He was fourteen and I had him since I was a student.",
    # "listening for him", not "expecting to hear him": the fp32 build reads "expecting" as
    # anticipating (0.136 vs sad 0.123); the old saturating int8 said sad only by rounding luck.
    "The house is so quiet now. I keep listening for him at the door when I come home.",
    "That's all.",
    *["five", "4", "five", "4", "five", "5", "4"],
    "three",
]


def test_session_uses_the_model_and_logs_components(home: Path) -> None:
    result, output, db = run_text_session(home, SAD_STORY)
    assert result.status == "completed"
    assert isinstance(app.story_chooser(app.open_home(home)), EmpathicChooser)
    row = db.execute(
        "SELECT condition, match_score, rank, components, learned_rating FROM story_exposures"
    ).fetchone()
    condition, match_score, rank, components, learned = row
    parts = json.loads(components)
    assert condition == "matched" and rank == 1
    assert {"match", "semantic", "emotion", "bonus", "features", "query_emotion",
            "model_version"} <= set(parts)  # fmt: skip
    assert 0.0 < parts["emotion"] <= 1.0 and -1.0 <= parts["semantic"] <= 1.0
    assert abs(parts["match"] - (0.2 * parts["semantic"] + 0.8 * parts["emotion"])) < 1e-4
    assert parts["weights"] == [0.2, 0.8] and parts["emotion_similarity"] == "agreement"
    # the logged score is the value the story was ranked on: 3 + 2.5 x match + bonus (no ratings)
    assert abs(match_score - (3.0 + 2.5 * parts["match"] + parts["bonus"])) < 1e-4
    # the participant's grief is recognised and acknowledged as grief (by the calibrated rule:
    # the exact feeling or, when only that is reliable, the sadness family's words)
    assert parts["query_emotion"] in {"sad", "devastated", "lonely", "nostalgic"}
    from companion.engine.acknowledge import shipped_phrases

    family = shipped_phrases().family

    named = ("sad", "heartbroken", "lonely", "nostalgic", *family["sadness"], *family["tender"])
    assert any(words in output for words in named)
    # the model learned from the mean post-story rating (5, 4, 5, 4, 5, 5, 4)
    assert learned == np.mean([5, 4, 5, 4, 5, 5, 4])
    assert db.execute("SELECT n FROM participant_models").fetchone() == (1,)


def test_sad_story_is_matched_to_a_sad_story(home: Path) -> None:
    result, _, db = run_text_session(home, SAD_STORY)
    emotion = db.execute(
        "SELECT s.emotion FROM story_exposures e JOIN stories s ON s.id = e.story_id"
    ).fetchone()[0]
    assert emotion in {"sad", "devastated", "lonely", "nostalgic", "sentimental", "disappointed"}


# Stories written for these tests (the companion team's own sentences).
EXTRA = [
    (
        "The empty kennel",
        "sad",
        "When our old dog died last spring I kept his kennel in the "
        "garden for months. Every morning I looked at it and felt the quiet where his barking used "
        "to be, and I cried more than I expected to.",
    ),
    (
        "Keys in the lake",
        "furious",
        "My brother threw my car keys into the lake as a joke and I "
        "was so angry I could not speak. We had to walk six miles home in the rain and he laughed "
        "the whole way while I fumed beside him.",
    ),
    (
        "A letter from Ana",
        "grateful",
        "A neighbour I barely knew left a letter in my door "
        "thanking me for shovelling her path all winter. I had never thought she noticed, and it "
        "made me feel warm and thankful for days.",
    ),
]


def _add_extra(home: Path) -> list[str]:
    from companion.engine.stories import Story, add_stories

    opened = app.open_home(home)
    stories = [Story(f"extra-{i}", t, x, e) for i, (t, e, x) in enumerate(EXTRA)]
    add_stories(opened.db, stories, source="import:test")
    return [s.id for s in stories]


def test_a_session_never_encodes_the_bank_and_logs_what_it_left_out(home: Path) -> None:
    ids = _add_extra(home)  # in the bank, not encoded (as after an import that was killed)
    result, _, db = run_text_session(home, SAD_STORY)
    assert result.status == "completed"
    encoded = {r[0] for r in db.execute("SELECT story_id FROM story_embeddings")}
    assert not encoded & set(ids)  # the session encoded nothing
    story = db.execute("SELECT story_id FROM story_exposures").fetchone()[0]
    assert story in encoded
    detail = db.execute("SELECT detail FROM events WHERE kind = 'bank_not_encoded'").fetchone()[0]
    assert detail.startswith("3 of 67 unheard stories have no encoding")
    # Encoding at import time (or init) makes them candidates; the next session has them all.
    app.prepare_bank(app.open_home(home))
    assert {r[0] for r in db.execute("SELECT story_id FROM story_embeddings")} >= set(ids)
    run_text_session(home, SAD_STORY)
    events = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'bank_not_encoded'")
    assert events.fetchone() == (1,)


def test_a_new_model_build_is_encoded_whole_before_the_next_session(home: Path) -> None:
    ids = _add_extra(home)
    app.prepare_bank(app.open_home(home))
    db = open_db(home / "companion.db")
    (version,) = db.execute("SELECT DISTINCT model_version FROM story_embeddings").fetchone()
    assert version == model_build()
    # Pretend the stored encodings came from an older model build.
    db.execute("UPDATE story_embeddings SET model_version = 'companion-empathy-0+old'")
    result, _, _ = run_text_session(home, SAD_STORY)
    assert result.status == "completed"
    rows = {r[0] for r in db.execute(
        "SELECT story_id FROM story_embeddings WHERE model_version = ?", [version])}  # fmt: skip
    # moved to the new build before the session began: shipped copied, imports encoded
    assert len(rows) == 67 and rows >= set(ids)
    left_out = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'bank_not_encoded'")
    assert left_out.fetchone() == (0,)
    (moved,) = db.execute("SELECT from_models FROM model_upgrades").fetchone()
    assert json.loads(moved) == ["companion-empathy-0+old"]


def test_protocol_weights_change_the_chosen_story(home: Path) -> None:
    """On a fixed bank (the shipped one) and fixed queries, the [matching] weights decide."""
    from companion.engine.stories import unheard_stories
    from companion.model import personalize
    from companion.model.empathy import PERSONALIZE, EmpathicMatcher
    from companion.model.similarity import ScoreWeights

    opened = app.open_home(home)
    chooser = app.story_chooser(opened)
    assert isinstance(chooser, EmpathicChooser)
    bank = unheard_stories(opened.db, "P042")
    # Several fixed queries: for one story the best semantic and best emotional match can be the
    # same story; the weights must change the top 5 of each and the first pick of some.
    first_changes = []
    for query in [" ".join(SAD_STORY[2:4]), *(text for _, _, text in EXTRA)]:
        firsts = {}
        for weights in ((1.0, 0.0), (0.6, 0.4), (0.0, 1.0)):
            matcher = EmpathicMatcher(opened.db, chooser.encoder, ScoreWeights(*weights),
                                      personalize.initial_state(PERSONALIZE), seed=1)  # fmt: skip
            ranked = matcher.rank(query, bank)
            # rank 1 is the best empathic match under these weights; the logged score orders it
            matches = [r.components["match"] for r in ranked]
            assert matches == sorted(matches, reverse=True)
            assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)
            firsts[weights] = [r.story.id for r in ranked[:5]]
        assert firsts[(1.0, 0.0)] != firsts[(0.0, 1.0)]
        first_changes.append(len({f[0] for f in firsts.values()}) >= 2)
    assert any(first_changes), first_changes


def test_replay_is_exact_and_detects_tampering(home: Path) -> None:
    for _ in range(3):
        run_text_session(home, SAD_STORY)
    proc = run_cli("model", "replay", "--home", str(home))
    assert proc.returncode == 0, proc.stderr
    assert "3 ratings replayed, max difference 0" in proc.stdout and "identical" in proc.stdout
    db = open_db(home / "companion.db")
    # A changed self-report after learning is reported...
    db.execute(
        "UPDATE self_reports SET value = 1 WHERE id = (SELECT MAX(id) - 1 FROM self_reports)"
    )
    report = replay_participant(db, "P042", ["story_empathy"])
    assert report.rating_mismatches == 1 and not report.identical
    # ...and so is a stored model that no longer matches the log.
    state = json.loads(db.execute("SELECT state FROM participant_models").fetchone()[0])
    state["shift"][1] += 0.5
    db.execute("UPDATE participant_models SET state = ?", [json.dumps(state)])
    assert replay_participant(db, "P042", ["story_empathy"]).max_difference == 0.5
    proc = run_cli("model", "replay", "--home", str(home))
    assert proc.returncode == 1 and "DIFFERENT" in proc.stdout


def test_unanswered_post_story_items_teach_nothing(home: Path) -> None:
    replies = SCRIPT[:5] + ["skip"] * 7 + ["five"]
    result, _, db = run_text_session(home, replies)
    assert result.status == "completed"
    assert db.execute("SELECT learned_rating FROM story_exposures").fetchone() == (None,)
    assert db["participant_models"].count == 0


def test_missing_model_falls_back_to_lexical_with_a_warning(home: Path, tmp_path: Path) -> None:
    config = home / "config.toml"
    config.write_text(config.read_text() + f'model = "{tmp_path / "nope.onnx"}"\n')
    result, _, db = run_text_session(home, SCRIPT)
    assert result.status == "completed" and result.story_id
    warning = db.execute("SELECT level, detail FROM events WHERE kind = 'model_unavailable'")
    level, detail = warning.fetchone()
    assert level == "warning" and "nope.onnx" in detail


def test_shipped_bank_cache_matches_stories_and_model() -> None:
    """The precomputed encodings are those of today's stories under today's model."""
    from companion.engine.stories import bundled_stories, content_hash
    from companion.model.empathy import bank_cache_path
    from companion.model.encode import Encoder

    encoder = Encoder.load()
    stories = bundled_stories()
    with np.load(bank_cache_path(encoder.version)) as cache:
        assert str(cache["model"]).startswith(encoder.version + "+" + encoder.meta["sha256"][:12])
        assert list(cache["ids"]) == [s.id for s in stories]
        assert list(cache["hashes"]) == [content_hash(s.text) for s in stories]
        for i in (0, len(stories) // 2, len(stories) - 1):
            fresh = encoder.encode(f"{stories[i].title}. {stories[i].text}")
            assert np.allclose(fresh.embedding, cache["embeddings"][i], atol=1e-4)
            assert np.allclose(fresh.emotions, cache["emotions"][i], atol=1e-4)


def test_the_protocols_emotion_similarity_reaches_the_chooser(home: Path) -> None:
    """`[matching] emotion_similarity` in a researcher's protocol file decides the rule the
    session's chooser scores with, and the exposure logs it."""
    from dataclasses import replace

    from companion.engine.protocol import default_protocol_text
    from companion.settings.config import write_config

    text = default_protocol_text().replace('# emotion_similarity = "agreement"',
                                           'emotion_similarity = "bhattacharyya"')  # fmt: skip
    (home / "protocol.toml").write_text(text)
    config = app.open_home(home).config
    write_config(app.open_home(home).home, replace(config, protocol="protocol.toml"))
    opened = app.open_home(home)
    assert opened.protocol.emotion_similarity == "bhattacharyya"
    chooser = app.story_chooser(opened)
    assert isinstance(chooser, EmpathicChooser) and chooser.weights.metric == "bhattacharyya"
    run_text_session(home, SAD_STORY)
    parts = json.loads(open_db(home / "companion.db").execute(
        "SELECT components FROM story_exposures").fetchone()[0])  # fmt: skip
    assert parts["emotion_similarity"] == "bhattacharyya"

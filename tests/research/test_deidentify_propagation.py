"""A name found once is redacted wherever the participant says it again (research.propagate):
the real spaCy pipeline, pinned gazetteers and word frequencies, sentences written for this
test, and a real de-identified export of a real study database."""

from __future__ import annotations

import csv

import pytest

from companion.research.deidentify import Redactor, apply_spans, redactor_for
from companion.research.export import ExportOptions, export_home
from companion.research.ner import load_pipeline
from tests.helpers.study import fill_study, make_home


@pytest.fixture
def redactor() -> Redactor:
    return redactor_for(["Maureen"], load_pipeline())


def redacted(r: Redactor, texts: list[str]) -> list[str]:
    return [apply_spans(t, s) for t, s in zip(texts, r.spans_many(texts), strict=True)]


def test_a_friend_named_once_is_redacted_when_said_bare(redactor) -> None:
    texts = ["my friend amber from the choir rang this morning",
             "amber brought round a lemon cake and we talked for hours",
             "then my neighbour grant popped in",
             "grant fixed the gate and amber laughed at him"]  # fmt: skip
    out = redacted(redactor, texts)
    assert all("amber" not in t and "grant" not in t for t in out), out
    assert out[1].startswith("[PERSON] brought round a lemon cake")


def test_a_pet_named_once_is_redacted_elsewhere(redactor) -> None:
    out = redacted(redactor, ["our spaniel pickle had her jabs today",
                              "pickle slept all afternoon by the radiator"])  # fmt: skip
    assert "pickle" not in out[1] and "slept all afternoon" in out[1], out


def test_frequent_words_and_months_never_spread(redactor) -> None:
    texts = ["my granddaughter hope is staying with us", "i hope the rain stops",
             "my nephew will rang from leeds", "i will ring him back tomorrow"]  # fmt: skip
    out = redacted(redactor, texts)
    assert out[1] == "i hope the rain stops"
    assert out[3] == "i will ring him back tomorrow"


def test_a_frequent_word_named_once_spreads_only_where_a_name_stands(redactor) -> None:
    texts = ["my granddaughter hope is staying with us", "i hope the rain stops",
             "hope baked scones with me", "then hope phoned her dad",
             "we live in hope of sun", "there is still hope"]  # fmt: skip
    out = redacted(redactor, texts)
    assert out[2] == "[PERSON] baked scones with me" and out[3] == "then [PERSON] phoned her dad"
    assert out[1] == texts[1] and out[4:] == texts[4:]  # the word, not the name


def test_names_spread_to_later_batches_of_an_export_but_not_to_another(redactor) -> None:
    redacted(redactor, ["my old friend dawn came for tea"])
    assert "dawn" not in redacted(redactor, ["dawn and i went for a walk"])[0]
    other = redactor_for(["Maureen"], load_pipeline())  # another export starts afresh
    assert redacted(other, ["dawn and i went for a walk"])[0].startswith("dawn")


def test_export_redacts_every_mention_of_a_name_said_once(tmp_path) -> None:
    opened = make_home(tmp_path / "home", "P-PROP-1", "Maureen")
    fill_study(opened, 2, seed=3, skip=0, interrupt=0)
    story = opened.db.execute("SELECT id FROM turns WHERE speaker = 'participant' AND purpose "
                              "= 'story' ORDER BY id").fetchall()  # fmt: skip
    assert len(story) >= 2
    said = ["my friend rose from the allotment came round with rhubarb",
            "rose brought a marrow after the frost and i hope mine survive"]  # fmt: skip
    with opened.db.conn:
        for (turn,), text in zip(story, said, strict=False):
            opened.db.conn.execute("UPDATE turns SET text = ? WHERE id = ?", (text, turn))
    out = tmp_path / "out"
    export_home(opened.home, out, ExportOptions(deidentify=True, include_transcripts=True))
    with (out / "turns.csv").open(newline="") as f:
        lines = [r["text"] for r in csv.DictReader(f) if r["speaker"] == "participant"]
    mine = [t for t in lines if "rhubarb" in t or "marrow" in t]
    assert len(mine) == 2 and not any("rose" in t for t in mine), mine
    assert any("i hope mine survive" in t for t in mine)

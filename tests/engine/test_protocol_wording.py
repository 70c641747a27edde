"""Everything the companion says is the protocol's: the acknowledgements, the answer hints and
the invitation replies are checked at load like every prompt, a study's own wording is what its
sessions say, and a file written before these keys existed takes the shipped wording."""

from __future__ import annotations

import json
import random
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.emotions import EMOTIONS, FAMILIES, VALENCE
from companion.engine.acknowledge import acknowledgement
from companion.engine.dialogue import Expectation, Heard
from companion.engine.protocol import (
    OPTIONAL_PROMPTS,
    default_protocol_text,
    load_protocol,
    parse_protocol,
)
from companion.engine.variety import PhraseMemory, pattern
from companion.errors import ConfigError
from companion.service.runner import Service
from tests.helpers.run import REPO, one_error_line, run_cli
from tests.helpers.study import make_home, run_scripted

DEFAULT = default_protocol_text()
SHIPPED = load_protocol()
# The shipped default protocol as it was before [acknowledgements], hint_* and invitation_*.
OLD_FORMAT = REPO / "tests" / "fixtures" / "protocol-before-phrases.toml"
# The least a protocol file written in that format needed.
MINIMAL = """
[protocol]
id = "tiny-study"
version = 3

[prompts]
greeting = "Hi {name}."
first_greeting = "Hi {name}, welcome."
checkin_intro = "How are you?"
story_invitation = "Tell me about {topic}."
story_nothing_heard = "Take your time: {topic}."
story_none = "Maybe next time."
story_intro = "Here is {title}."
story_outro = "The end."
no_stories_left = "No stories today."
instruments_intro = "Some questions."
reprompt = "Sorry? {hint}"
gave_up = "Let's move on."
closing = "Thank you."
goodbye = "Bye {name}."
topics = ["your day"]

[[instruments]]
id = "mood"
phase = "checkin"

[[instruments.items]]
id = "valence"
type = "likert"
text = "From one to five, how is your mood?"
"""

BAD = [
    # [acknowledgements]: unknown keys, at every level
    ("\n[acknowledgements]\n", '\n[acknowledgements]\nreflect = ["A.", "B."]\n',
     "acknowledgements.reflect", "unknown field"),
    ("[acknowledgements.family]\n", '[acknowledgements.family]\nsurprise = ["A.", "B."]\n',
     "acknowledgements.family.surprise", "unknown field"),
    ("[acknowledgements.valence]\n", '[acknowledgements.valence]\nmixed = ["A.", "B."]\n',
     "acknowledgements.valence.mixed", "unknown field"),
    ("[acknowledgements.feeling_words]\n", '[acknowledgements.feeling_words]\nhappy = "glad"\n',
     "acknowledgements.feeling_words.happy", "unknown field"),
    # every emotion, family and valence group covered
    ('faithful = "loyal"\n', "", "acknowledgements.feeling_words.faithful", "missing"),
    ("[acknowledgements.named]\njoy = [", "[acknowledgements.named]\njoyful = [",
     "acknowledgements.named.joyful", "unknown field"),
    ("[acknowledgements.valence]\npositive", "[acknowledgements.valence]\npleasant",
     "acknowledgements.valence.pleasant", "unknown field"),
    # placeholders, per key
    ('"It\'s lovely to hear you felt {feeling}."', '"It\'s lovely to hear that."',
     "acknowledgements.named.tender", "must say {feeling}"),
    ('"It\'s lovely to hear you felt {feeling}."', '"It\'s lovely, {name}: {feeling}."',
     "acknowledgements.named.tender", "unknown placeholder {name}"),
    ('"That sounds like a really good moment."', '"That sounds like a {feeling} moment."',
     "acknowledgements.family.joy", "unknown placeholder {feeling}"),
    ('"Mm, I hear you."', '"Mm, I hear you, {name}."', "acknowledgements.neutral",
     "unknown placeholder {name}"),
    ('"It\'s good to hear something positive."', '"It\'s good to hear {topic}."',
     "acknowledgements.valence.positive", "unknown placeholder {topic}"),
    # no duplicate within a list (case and spacing ignored), at least two per list
    ('"Mm, I hear you."', '"thank you for  telling me that."', "acknowledgements.neutral",
     "listed twice"),
    ('"That sounds really unsettling.",', '"That sounds like it put you on edge.",',
     "acknowledgements.family.fear", "listed twice"),
    # a broader level names no single feeling; a neutral phrase is neither glad nor sorry
    ('"That sounds like a really good moment."', '"You sound proud of it."',
     "acknowledgements.family.joy", "'proud'"),
    ('"That\'s good to hear."', '"You sound really frightened."',
     "acknowledgements.valence.positive", "'really frightened'"),
    ('"Mm, I hear you."', '"That sounds lovely."', "acknowledgements.neutral", "'lovely'"),
    # answer hints and invitation replies: prompts with placeholders of their own
    ("{low} to {high}, or say skip this one.", "{low} to {top}, or say skip.",
     "prompts.hint_likert", "unknown placeholder {top}"),
    ('hint_yesno = "Please say yes or no', 'hint_yesno = "Please say {low} or no',
     "prompts.hint_yesno", "unknown placeholder {low}"),
    ("ask again in {minutes} minutes", "ask again in {hours} hours", "prompts.invitation_snoozed",
     "unknown placeholder {hours}"),
    ('invitation_declined = "That\'s fine.', 'invitation_declined = "That\'s fine, {topic}.',
     "prompts.invitation_declined", "unknown placeholder {topic}"),
    ("[prompts.alternatives]\n", '[prompts.alternatives]\ninvitation_declined = ["Later."]\n',
     "prompts.alternatives.invitation_declined", "give one wording"),
    ('hint_text = "Please answer', 'hint_txt = "Please answer', "prompts.hint_txt",
     "unknown field"),
    # when an earlier story was told: five wordings, in order, without placeholders
    ('"Last week", "A while ago"]', '"A while ago"]', "prompts.recall_when", "needs 5 wordings"),
    ('"Last week", "A while ago"]', '"Last {name}", "A while ago"]', "prompts.recall_when",
     "no placeholders"),
    ('"Last week", "A while ago"]', '"Last week", "yesterday"]', "prompts.recall_when",
     "listed twice"),
    # the lists the companion already varied: no wording twice either
    ('"Who else was part of it?",', '"What did you do right after?",', "prompts.follow_ups",
     "listed twice"),
    ('"a time someone surprised you",', '"a friendship that has lasted",', "prompts.topics",
     "listed twice"),
    ('"Hi {name}. I\'m glad you\'re here.",', '"Hello {name}, it\'s nice to see you. '
     'I\'m glad we have a few minutes together.",', "prompts.alternatives.greeting",
     "listed twice"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "where", "needle"), BAD)
def test_bad_wording_is_one_line_naming_the_file_and_key(
    old: str, new: str, where: str, needle: str
) -> None:
    assert DEFAULT.count(old) >= 1, old
    with pytest.raises(ConfigError) as err:
        parse_protocol(DEFAULT.replace(old, new, 1), "study.toml")
    message = str(err.value)
    assert message.startswith(f"study.toml: {where}: ") and "\n" not in message, message
    assert needle in message, message


def test_every_list_the_companion_picks_from_needs_two_phrases() -> None:
    start = DEFAULT.index("neutral = [")
    end = DEFAULT.index("]\n", start) + 2
    text = DEFAULT[:start] + 'neutral = ["Mm, I hear you."]\n' + DEFAULT[end:]
    with pytest.raises(ConfigError, match=r"^s\.toml: acknowledgements\.neutral: needs at least 2"):
        parse_protocol(text, "s.toml")


def test_the_shipped_phrases_cover_every_emotion_family_and_group() -> None:
    ack = SHIPPED.acknowledgements
    assert set(ack.feeling_words) == set(EMOTIONS)
    assert set(ack.named) == set(ack.family) == set(FAMILIES)
    assert set(ack.valence) == set(VALENCE)
    lists = [ack.neutral, *ack.named.values(), *ack.family.values(), *ack.valence.values()]
    assert all(len(set(p)) == len(p) >= 2 for p in lists)
    assert SHIPPED.defaulted == ()  # the shipped file takes no wording from elsewhere


def written_out(text: str) -> str:
    """A protocol file with the shipped wording it leaves out written in: what leaving it out
    must mean."""
    given = tomllib.loads(text)["prompts"]
    lines = [
        f"{k} = {json.dumps(SHIPPED.prompts[k])}\n" for k in OPTIONAL_PROMPTS if k not in given
    ]
    if "recall_when" not in given:
        lines.append(f"recall_when = {json.dumps(list(SHIPPED.recall_when))}\n")
    start, end = DEFAULT.index("\n[acknowledgements]\n"), DEFAULT.index("# ---- Instruments")
    return text.replace("\n[prompts]\n", "\n[prompts]\n" + "".join(lines), 1) + DEFAULT[start:end]


@pytest.mark.parametrize("text", [OLD_FORMAT.read_text(), MINIMAL], ids=["old-default", "minimal"])
def test_files_in_the_old_format_load_with_the_shipped_wording(text: str) -> None:
    old, full = parse_protocol(text, "old.toml"), parse_protocol(written_out(text), "full.toml")
    assert old.acknowledgements == full.acknowledgements == SHIPPED.acknowledgements
    assert (old.prompts, old.alternatives) == (full.prompts, full.alternatives)
    assert old.prompts["hint_likert"] == SHIPPED.prompts["hint_likert"]
    assert old.recall_when == full.recall_when == SHIPPED.recall_when
    assert "acknowledgements" in old.defaulted and "prompts.hint_likert" in old.defaulted
    assert "prompts.recall_when" in old.defaulted
    assert full.defaulted == ()


def test_a_file_with_some_of_the_new_keys_keeps_them_and_takes_the_shipped_rest() -> None:
    text = OLD_FORMAT.read_text() + '\n[acknowledgements]\nneutral = ["I see.", "Go on."]\n'
    partial = parse_protocol(text, "new.toml")
    assert partial.acknowledgements.neutral == ("I see.", "Go on.")
    assert partial.acknowledgements.named == SHIPPED.acknowledgements.named
    assert "acknowledgements.named" in partial.defaulted
    assert "acknowledgements.neutral" not in partial.defaulted


# Unclear answers (each type's hint), a story with follow-ups, and ratings.
LINES = ["banana", "4", "what", "??", "x", "2", "My sister moved to Leeds and the house is quiet.",
         "I miss her a lot.", "that's all", *["zz", "3"] * 7, "fine", "5"]  # fmt: skip
AT = datetime(2027, 3, 1, 18, tzinfo=UTC)


def companion_turns(home: Path, protocol_text: str) -> list[tuple[str, str]]:
    opened = make_home(home, "P042", "Robin", condition="matched", protocol_text=protocol_text)
    assert run_scripted(opened, LINES, AT) == "completed"
    return opened.db.execute(
        "SELECT purpose, text FROM turns WHERE speaker = 'companion' ORDER BY id"
    ).fetchall()


def test_an_old_format_file_says_what_the_shipped_wording_says(tmp_path: Path) -> None:
    old = companion_turns(tmp_path / "old", OLD_FORMAT.read_text())
    full = companion_turns(tmp_path / "full", written_out(OLD_FORMAT.read_text()))
    assert old == full
    hint = SHIPPED.prompts["hint_likert"].format(low="one", high="five")
    assert any(text.endswith(hint) for _, text in old)
    assert any(purpose == "follow_up" for purpose, _ in old)


def own_acknowledgements() -> str:
    """An [acknowledgements] table of our own, leaving out feeling_words (the shipped ones)."""
    lines = ["[acknowledgements]", 'neutral = ["Noted, with thanks.", "I follow you."]',
             "[acknowledgements.named]"]  # fmt: skip
    lines += [f'{f} = ["So: {{feeling}} ({f}).", "Quite {{feeling}}, then ({f})."]'
              for f in FAMILIES]  # fmt: skip
    lines += ["[acknowledgements.family]"]
    lines += [f'{f} = ["A {f} moment.", "One of those {f} times."]' for f in FAMILIES]
    lines += ["[acknowledgements.valence]"]
    lines += [f'{g} = ["A {g} one.", "{g.title()}, then."]' for g in VALENCE]
    return "\n" + "\n".join(lines) + "\n\n"


def test_a_studys_own_wording_is_what_its_sessions_say(tmp_path: Path) -> None:
    start, end = DEFAULT.index("\n[acknowledgements]\n"), DEFAULT.index("# ---- Instruments")
    text = DEFAULT[:start] + own_acknowledgements() + DEFAULT[end:]
    text = text.replace("Please say a number from {low} to {high}, or say skip this one.",
                        "Say {low} to {high}, {name}, or skip.")  # fmt: skip
    protocol = parse_protocol(text, "own.toml")
    ack = protocol.acknowledgements
    rng, memory = random.Random(3), PhraseMemory()
    sad = dict.fromkeys(EMOTIONS, 0.0) | {"sad": 1.0}
    exact = acknowledgement(sad, memory, rng, {"exact": 0.5}, phrases=ack)
    assert exact in ("So: sad (sadness).", "Quite sad, then (sadness).")
    assert acknowledgement(None, memory, rng, phrases=ack) in ack.neutral

    turns = companion_turns(tmp_path / "own", text)
    said = [t for _, t in turns]
    assert "Sorry, I didn't quite catch that. Say one to five, Robin, or skip." in said
    ours = [*ack.neutral, *(p for table in (ack.named, ack.family, ack.valence)
                            for ps in table.values() for p in ps)]  # fmt: skip
    acks = [t for purpose, t in turns if purpose in ("follow_up", "acknowledgement")]
    assert acks and all(any(pattern(p).match(t) for p in ours) for t in acks), acks


class Answering:
    """A participant who answers the invitation with `reply`; what the companion said is kept."""

    def __init__(self, reply: str, said: list[str]) -> None:
        self.reply, self.said = reply, said

    def say(self, text: str) -> None:
        self.said.append(text)

    def listen(self, expect: Expectation) -> Heard:
        now = datetime.now(UTC)
        return Heard(self.reply, now, now)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("own", [True, False])
def test_the_invitation_replies_are_the_protocols(tmp_path: Path, own: bool) -> None:
    text = OLD_FORMAT.read_text()
    if own:
        text = text.replace(
            "[prompts]\n",
            '[prompts]\ninvitation_snoozed = "Back in {minutes} '
            'minutes, {name}."\ninvitation_declined = "Another day, {name}."\n',
        )
    opened = make_home(tmp_path, "P042", "Robin", protocol_text=text)
    minutes = opened.protocol.schedule.snooze_minutes
    for reply, key in (("not now", "invitation_snoozed"), ("no thanks", "invitation_declined")):
        said: list[str] = []
        Service(opened, lambda r=reply, s=said: Answering(r, s)).invite_and_run()
        expected = (opened.protocol if own else SHIPPED).prompts[key]
        assert said[-1] == expected.format(minutes=minutes, name="Robin"), said
    if own:
        assert said[-1] == "Another day, Robin."


def test_protocol_check_covers_the_wording(tmp_path: Path) -> None:
    bad = tmp_path / "study.toml"
    bad.write_text(DEFAULT.replace('"Mm, I hear you."', '"Mm, sorry to hear it."'))
    proc = run_cli("protocol", "check", str(bad))
    assert proc.returncode == 2
    one_error_line(proc, "study.toml: acknowledgements.neutral:", "'sorry'")
    old = run_cli("protocol", "check", str(OLD_FORMAT))
    assert old.returncode == 0, old.stderr
    assert "shipped wording used: prompts.hint_likert" in old.stdout
    assert old.stdout.rstrip().endswith(", acknowledgements, answers"), old.stdout
    shipped = run_cli("protocol", "check", "companion/data/default_protocol.toml")
    assert shipped.returncode == 0 and "shipped wording used: none" in shipped.stdout


def test_the_invitation_is_a_prompt_and_an_older_schedule_invitation_still_counts() -> None:
    shipped = "Hello {name}, would you like to share a story now?"
    assert SHIPPED.prompts["invitation"] == shipped
    own = DEFAULT.replace(f'invitation = "{shipped}"', 'invitation = "Story time, {name}?"', 1)
    assert parse_protocol(own, "own.toml").wording("invitation", name="Ana") == "Story time, Ana?"
    older = OLD_FORMAT.read_text() + '\n[schedule]\ninvitation = "Ready, {name}?"\n'
    assert parse_protocol(older, "old.toml").prompts["invitation"] == "Ready, {name}?"
    same = DEFAULT + f'\n[schedule]\ninvitation = "{shipped}"\n'  # the shipped file, as before
    assert parse_protocol(same, "same.toml").prompts["invitation"] == shipped
    both = DEFAULT + '\n[schedule]\ninvitation = "Ready, {name}?"\n'
    with pytest.raises(ConfigError, match=r"^both\.toml: prompts\.invitation: differs from "):
        parse_protocol(both, "both.toml")

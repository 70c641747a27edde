"""Everything the companion hears is the protocol's too: the [answers] words replies are
understood with are checked at load by the rules that keep "answers are never guessed" true,
a study's own words are what its sessions understand, and a file written before the table
existed understands replies as the shipped words do."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.engine import answers
from companion.engine.answer_words import KEYS
from companion.engine.items import parse_item, vocabulary_for
from companion.engine.protocol import Item, default_protocol_text, load_protocol, parse_protocol
from companion.errors import ConfigError
from companion.voice.vocab import answer_vocabularies
from tests.helpers.run import REPO, one_error_line, run_cli
from tests.helpers.study import make_home, run_scripted

DEFAULT = default_protocol_text()
SHIPPED = load_protocol().answer_words
OLD_FORMAT = REPO / "tests" / "fixtures" / "protocol-before-phrases.toml"
FILLERS = 'fillers = [\n    "i", "i\'d",'
HEDGES = 'hedges = [\n    "probably",'
YES = 'yes = [\n    "yes",'
NO = 'no = [\n    "no",'
SKIP = 'skip = [\n    "skip",'
REPEAT = 'repeat = [\n    "repeat",'
CLOSINGS = 'closings = [\n    "thats all",'
YES_NO_IGNORED = 'yes_no_ignored = ["um",'
SPOKEN_YES_NO = 'spoken_yes_no = [\n    "yes",'
SPOKEN_COMMANDS = 'spoken_commands = ["skip this one",'
INVITE_YES = 'invite_yes = ["yes",'
ANSWER_FORMS = 'spoken_answer_forms = ["i\'d say {n}",'
HEDGE_FORMS = 'spoken_hedge_forms = ["{n} i think",'
SPOKEN_HEDGES = 'spoken_hedges = ["not sure",'
INVITE_LATER = 'invite_later = ["not now",'
INVITE_IGNORED = 'invite_ignored = ["please",'


def setting(key: str, value: str) -> tuple[str, str]:
    """A replacement that gives [answers] `key` the TOML `value`."""
    start = DEFAULT.index(f"\n{key} = [", DEFAULT.index("\n[answers]\n")) + 1
    return DEFAULT[start : DEFAULT.index("]\n", start) + 1], f"{key} = {value}"


def adding(start: str, entry: str) -> tuple[str, str]:
    """A replacement that puts `entry` first in the list that begins with `start`."""
    key, _, rest = start.partition(" = [")
    return start, f"{key} = [{entry}, {rest.lstrip()}"


BAD = [
    # the table's shape
    (("[answers]\n", '[answers]\nfiller = ["um"]\n'), "answers.filler", "unknown field"),
    (adding(FILLERS, '"um"'), "answers.fillers", "'um' is listed twice"),
    (adding(SKIP, '"Skip"'), "answers.skip", "'skip' is listed twice"),
    (adding(REPEAT, '"Say  what"'), "answers.repeat", "lower-case words between single spaces"),
    (adding(FILLERS, '"you know"'), "answers.fillers", "must be one word"),
    (adding(CLOSINGS, '"that\'s the lot"'), "answers.closings", "without apostrophes"),
    (setting("fillers", "[]"), "answers.fillers", "needs at least one entry"),
    (setting("hedges", '"maybe"'), "answers.hedges", "must be a list"),
    # a filler carries no value, no doubt, no no and no request
    (adding(FILLERS, '"four"'), "answers.fillers", "'four' is a number"),
    (adding(FILLERS, '"4"'), "answers.fillers", "'4' is a number"),
    (adding(FILLERS, '"maybe"'), "answers.fillers", "'maybe' is also in hedges"),
    (adding(FILLERS, '"not"'), "answers.fillers", "'not' is also in hedges"),
    (adding(FILLERS, '"nope"'), "answers.fillers", "'nope' is also in no"),
    (adding(FILLERS, '"pass"'), "answers.fillers", "'pass' is also in skip"),
    (adding(FILLERS, '"pardon"'), "answers.fillers", "'pardon' is also in repeat"),
    (adding(HEDGES, '"okay"'), "answers.fillers", "'okay' is also in hedges"),
    # a reply means one thing
    (adding(YES, '"nope"'), "answers.no", "'nope' is in yes as well"),
    (adding(NO, '"of course"'), "answers.no", "'of course' is in yes as well"),
    (adding(REPEAT, '"next"'), "answers.repeat", "'next' is in skip as well"),
    # nothing a yes/no question ignores may change its answer
    (adding(YES_NO_IGNORED, '"maybe"'), "answers.yes_no_ignored", "'maybe' is a hedge"),
    (adding(YES_NO_IGNORED, '"really"'), "answers.yes_no_ignored", "a word of a yes or no"),
    # what a grammar listens for parses as what it is there for
    (adding(SPOKEN_YES_NO, '"perhaps"'), "answers.spoken_yes_no", "'perhaps' does not parse"),
    (setting("spoken_yes_no", '["yes", "sure"]'), "answers.spoken_yes_no", "needs a yes and a no"),
    (adding(SPOKEN_COMMANDS, '"go on"'), "answers.spoken_commands", "'go on' is not a skip"),
    (adding(SPOKEN_COMMANDS, '"skip"'), "answers.spoken_commands", "'skip' is one word"),
    (adding(SPOKEN_HEDGES, '"four"'), "answers.spoken_hedges", "'four' reads as an answer"),
    (adding(SPOKEN_HEDGES, '"yes"'), "answers.spoken_hedges", "'yes' reads as an answer"),
    (adding(SPOKEN_HEDGES, '"skip it"'), "answers.spoken_hedges", "reads as an answer or a"),
    # a phrase form holds its number once and reads as it (or, with a doubt, as unclear)
    (adding(ANSWER_FORMS, '"i say"'), "answers.spoken_answer_forms", "must hold {n} once"),
    (adding(ANSWER_FORMS, '"{n} or {n}"'), "answers.spoken_answer_forms", "must hold {n} once"),
    (adding(ANSWER_FORMS, '"about {n}"'), "answers.spoken_answer_forms", "'about zero' does not"),
    (adding(ANSWER_FORMS, '"{n} out of five"'), "answers.spoken_answer_forms", "does not read"),
    (adding(HEDGE_FORMS, '"say {n}"'), "answers.spoken_hedge_forms", "'say zero' reads as an"),
    # an invitation reply means one thing, and nothing ignored in it could change it
    (adding(INVITE_YES, '"later"'), "answers.invite_later", "'later' is in invite_yes as well"),
    (adding(INVITE_LATER, '"no thanks"'), "answers.invite_no", "in invite_later as well"),
    (adding(INVITE_IGNORED, '"now"'), "answers.invite_ignored", "'now' is a word of an"),
    (adding(INVITE_IGNORED, '"let us"'), "answers.invite_ignored", "must be one word"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "where", "needle"), BAD, ids=[b[2] for b in BAD])
def test_bad_answer_words_are_one_line_naming_the_file_and_key(
    change: tuple[str, str], where: str, needle: str
) -> None:
    old, new = change
    assert DEFAULT.count(old) == 1, old
    with pytest.raises(ConfigError) as err:
        parse_protocol(DEFAULT.replace(old, new, 1), "study.toml")
    message = str(err.value)
    assert message.startswith(f"study.toml: {where}: ") and "\n" not in message, message
    assert needle in message, message


def test_what_a_study_may_leave_empty_and_what_it_may_not() -> None:
    text = DEFAULT.replace(*setting("yes_no_ignored", "[]"), 1)
    loaded = parse_protocol(text, "study.toml").answer_words
    assert loaded.yes_no_ignored == frozenset()
    # nothing ignored: "um, yes" has a word that is no yes, so it is no longer a yes
    assert answers.parse_yes_no("um, yes", words=SHIPPED) == answers.Answer("value", 1)
    assert answers.parse_yes_no("um, yes", words=loaded).kind == "unclear"


def test_the_shipped_words_keep_every_rule() -> None:
    assert set(KEYS) == set(load_protocol().answer_words.__dataclass_fields__)
    assert not SHIPPED.fillers & (SHIPPED.hedges | SHIPPED.no | SHIPPED.skip | SHIPPED.repeat)
    assert not SHIPPED.fillers & set(answers.NUMBER_WORDS)
    assert not SHIPPED.yes & SHIPPED.no
    assert load_protocol().defaulted == ()


def test_files_from_before_the_table_understand_replies_as_the_shipped_words_do() -> None:
    old = parse_protocol(OLD_FORMAT.read_text(), "old.toml")
    assert "[answers]" not in OLD_FORMAT.read_text()
    assert old.answer_words == SHIPPED
    assert "answers" in old.defaulted
    partial = parse_protocol(OLD_FORMAT.read_text() + '\n[answers]\nfillers = ["um"]\n', "p.toml")
    assert partial.answer_words.fillers == frozenset({"um"})
    assert partial.answer_words.skip == SHIPPED.skip
    assert "answers.skip" in partial.defaulted and "answers.fillers" not in partial.defaulted
    # what a grammar recogniser listens for is the same as with the shipped protocol
    assert answer_vocabularies(old) == answer_vocabularies(load_protocol())


def own_words(text: str) -> str:
    """`text` with [answers] of its own: one filler and one yes word more."""
    fillers, yes = ["reckon", *sorted(SHIPPED.fillers)], ["aye", *sorted(SHIPPED.yes)]
    return f"{text}\n[answers]\nfillers = {json.dumps(fillers)}\nyes = {json.dumps(yes)}\n"


def test_a_studys_own_words_are_what_its_parser_understands() -> None:
    words = parse_protocol(own_words(OLD_FORMAT.read_text()), "own.toml").answer_words
    rating = Item("q", "likert", "How much?", 1, 5)
    assert parse_item(rating, "I reckon four", words) == answers.Answer("value", 4)
    assert parse_item(rating, "I reckon four", SHIPPED).kind == "unclear"
    # a filler never makes a hedged reply a value
    assert parse_item(rating, "I reckon maybe four", words).kind == "unclear"
    asked = Item("y", "yesno", "Did you?")
    assert parse_item(asked, "aye", words) == answers.Answer("value", 1)
    assert parse_item(asked, "aye", SHIPPED).kind == "unclear"
    assert vocabulary_for(asked, words) == vocabulary_for(asked, SHIPPED)


def stored(home: Path, protocol_text: str, reply: str) -> tuple[int | None, int]:
    """The mood rating a real text session stores when `reply` is the first answer: its
    value and how many replies it took."""
    opened = make_home(home, "P042", "Robin", condition="matched", protocol_text=protocol_text)
    lines = [reply, "4", "4", "My sister moved to Leeds and the house is quiet.", "that's all",
             *["3"] * 20]  # fmt: skip
    run_scripted(opened, lines, datetime(2027, 3, 1, 18, tzinfo=UTC))
    value, attempts = opened.db.execute(
        "SELECT value, attempts FROM self_reports WHERE instrument = 'mood' ORDER BY id LIMIT 1"
    ).fetchone()
    return value, attempts


def test_a_studys_own_words_are_what_its_sessions_understand(tmp_path: Path) -> None:
    text = OLD_FORMAT.read_text()
    assert stored(tmp_path / "own", own_words(text), "I reckon two") == (2, 1)
    assert stored(tmp_path / "shipped", text, "I reckon two") == (4, 2)  # asked again


def test_protocol_check_refuses_bad_answer_words(tmp_path: Path) -> None:
    bad = tmp_path / "study.toml"
    bad.write_text(DEFAULT.replace(*adding(FILLERS, '"probably"'), 1))
    proc = run_cli("protocol", "check", str(bad))
    assert proc.returncode == 2
    one_error_line(proc, "study.toml: answers.fillers:", "'probably' is also in hedges")
    old = run_cli("protocol", "check", str(OLD_FORMAT))
    assert old.returncode == 0 and "answers" in old.stdout, old.stderr


def test_a_studys_own_invitation_replies_are_how_the_service_reads_them() -> None:
    from companion.service.schedule import classify_reply

    own = parse_protocol(DEFAULT.replace(*adding(INVITE_LATER, '"after tea"'), 1), "s.toml")
    assert classify_reply("after tea please", own.answer_words) == "snoozed"
    assert classify_reply("after tea please", SHIPPED) == "no_answer"
    assert "after tea" in own.answer_words.invite_vocabulary


def test_every_answer_a_session_listens_for_carries_the_protocols_hedges(tmp_path: Path) -> None:
    """What a grammar recogniser hears beside the answers is the study's, at every question."""
    from companion.engine.dialogue import Expectation, Heard
    from companion.engine.session import run_session
    from tests.helpers.run import SCRIPT

    text = DEFAULT.replace(*setting("spoken_hedges", '["not sure", "pass me by"]'), 1)
    opened = make_home(tmp_path, "P001", "Robin", protocol_text=text)
    heard: list[Expectation] = []
    replies = iter(SCRIPT)

    class Recording:  # a channel that records what each turn expects
        mode = "text"

        def say(self, text: str) -> None:
            pass

        def listen(self, expect: Expectation) -> Heard:
            heard.append(expect)
            now = datetime.now(UTC)
            return Heard(next(replies, "skip"), now, now)

        def close(self) -> None:
            pass

    from companion import app

    run_session(opened.recorder, opened.protocol, Recording(), opened.participant,
                app.story_chooser(opened))  # fmt: skip
    answers_heard = [e for e in heard if e.kind == "answer"]
    assert len(answers_heard) >= 10
    assert all(e.hedges == ("not sure", "pass me by") for e in answers_heard)

"""The study protocol: what the companion says and asks, editable by researchers in TOML.

Loading validates everything up front, so a typo is one clear line naming the
file and field, never a crash halfway through a participant's session.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from companion.engine.answer_words import KEYS as ANSWER_KEYS
from companion.engine.answer_words import parse_answer_words
from companion.engine.answers import AnswerWords
from companion.engine.confirm import POLICIES
from companion.engine.confirm import Policy as ConfirmPolicy
from companion.engine.phrases import KEYS as ACKNOWLEDGEMENT_KEYS
from companion.engine.phrases import Acknowledgements, parse_acknowledgements
from companion.engine.recall import WHEN_BANDS
from companion.errors import ConfigError
from companion.settings.schedule import ScheduleConfig, parse_schedule
from companion.settings.validate import SQLITE_INT_MAX, Table, parse_toml, read_toml

Condition = Literal["matched", "random", "counterbalanced"]
CONDITIONS = ("matched", "random", "counterbalanced")
# How two emotion distributions are compared in the match score (model.similarity).
EmotionMetric = Literal["agreement", "bhattacharyya", "js"]
EMOTION_METRICS = ("agreement", "bhattacharyya", "js")
PHASES = ("checkin", "post_story", "closing")
SESSION_KINDS = ("daily", "enrolment", "exit")
ITEM_TYPES = ("likert", "yesno", "text")
# Every prompt and the placeholders the session fills in it: {name} (the participant's
# name) everywhere, {topic} a story topic, {title} the chosen story's title, {hint} how to
# answer, {answer} the rating heard, {when} and {memory} when and what of an earlier story
# ("Last week", "your sister's move"), {low} and {high} a likert scale's ends as words,
# {minutes} the snooze. Anything else is rejected at load.
PROMPT_PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "greeting": ("name",), "first_greeting": ("name",), "checkin_intro": ("name",),
    "story_invitation": ("name", "topic"), "story_nothing_heard": ("name", "topic"),
    "story_none": ("name",), "story_intro": ("name", "title"), "story_outro": ("name",),
    "no_stories_left": ("name",), "instruments_intro": ("name",), "reprompt": ("name", "hint"),
    "gave_up": ("name",), "closing": ("name",), "goodbye": ("name",),
    "confirm": ("name", "answer"), "confirm_retry": ("name",),
    "follow_ups": ("name",), "story_recall": ("name", "when", "memory"),
    "hint_likert": ("name", "low", "high"), "hint_yesno": ("name",), "hint_text": ("name",),
    "invitation": ("name",), "invitation_snoozed": ("name", "minutes"),
    "invitation_declined": ("name",),
}  # fmt: skip
REQUIRED_PROMPTS = (
    "greeting", "first_greeting", "checkin_intro", "story_invitation", "story_nothing_heard",
    "story_none", "story_intro", "story_outro", "no_stories_left", "instruments_intro",
    "reprompt", "gave_up", "closing", "goodbye",
)  # fmt: skip
# Prompts a protocol file may leave out (files older than them): they take the shipped
# protocol's wording. The shipped file must have them all.
OPTIONAL_PROMPTS = (
    "confirm", "confirm_retry", "story_recall", "hint_likert", "hint_yesno", "hint_text",
    "invitation", "invitation_snoozed", "invitation_declined",
)  # fmt: skip
# Said by the service outside a session, where no wording memory rotates alternatives.
ONE_WORDING = ("invitation", "invitation_snoozed", "invitation_declined")


@dataclass(frozen=True)
class Item:
    id: str
    type: Literal["likert", "yesno", "text"]
    text: str  # spoken as written (no placeholders)
    min: int = 1  # likert scale, 0 <= min < max <= 10
    max: int = 5
    anchors: Mapping[int, str] | None = None  # likert labels by scale point; None = numbers only


@dataclass(frozen=True)
class Instrument:
    id: str
    items: tuple[Item, ...]
    phase: str = "post_story"  # "checkin", "post_story" or "closing"
    sessions: tuple[str, ...] = ("daily",)  # session kinds it is asked in: daily, enrolment, exit
    intro: str | None = None  # said before the first item; None = nothing


@dataclass(frozen=True)
class Protocol:
    """A study protocol file. Keys left out of the file take the defaults below."""

    # [protocol] id and version, stored with every session (version 1 up to SQLite's INTEGER).
    id: str
    version: int
    title: str  # defaults to the id
    # [prompts]: every prompt's wording by key (see PROMPT_PLACEHOLDERS); topics rotate in
    # the story invitation.
    prompts: Mapping[str, str]
    topics: tuple[str, ...]
    source: str  # the file (or "default protocol"), for messages
    # [acknowledgements]: what is said after a story turn, by naming level (engine.phrases).
    acknowledgements: Acknowledgements
    # [answers]: the words replies are understood with (engine.answer_words).
    answer_words: AnswerWords
    # Questions asked between story turns (may use {name}); none = no follow-ups.
    follow_ups: tuple[str, ...] = ()
    # {when} of story_recall, by how long ago the story was told (engine.recall.WHEN_BANDS):
    # yesterday, two or three days, up to a week, up to two weeks, longer.
    recall_when: tuple[str, ...] = ()
    instruments: tuple[Instrument, ...] = ()
    # Which story is read: "matched", "random" or "counterbalanced" (alternating).
    condition: Condition = "matched"
    # How often an unclear answer is asked again before it is stored as missing (0..10).
    max_reprompts: int = 2
    # Follow-up turns after the participant's first story turn (0..10).
    follow_up_turns: int = 2
    # Longest story turn in voice mode, in seconds (5..1800): the only story-length knob.
    story_max_seconds: float = 180.0
    # [matching] weights of the empathic match score, each 0..1, not both 0 (fitted for
    # companion-empathy-2: models/fit_matching.py).
    semantic_weight: float = 0.2
    emotion_weight: float = 0.8
    # [matching] how the emotion distributions are compared: "agreement" (the chance both name
    # the same emotion), "bhattacharyya" (before 2026-11-30) or "js".
    emotion_similarity: EmotionMetric = "agreement"
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    # Voice mode: when a recognised rating is read back ("is that right?") before it is
    # stored: "when_unsure" (true; engine.confirm decides), "always", or "never" (false).
    confirm_voice_answers: ConfirmPolicy = "when_unsure"
    # Voice mode: keep participant turns as 16 kHz WAV files under HOME/audio.
    keep_audio: bool = False
    # Voice mode: how fast the companion speaks, relative to its voice's own pace (0.5..2;
    # 0.8 = 20 % slower): piper's length_scale is its inverse, pyttsx3's words per minute
    # are [voice] tts_rate times it.
    speaking_rate: float = 1.0
    # Voice mode: the silence between two sentences, and before a story is read, in seconds.
    sentence_pause_seconds: float = 0.35
    story_pause_seconds: float = 1.2
    # Every wording of each prompt, the [prompts] one first, then [prompts.alternatives]: the
    # session says the one not said for longest (engine.variety).
    alternatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # No prompt, follow-up, topic or acknowledgement wording is said again within this many
    # days while an alternative remains (0..366).
    avoid_repeat_days: int = 7
    # Now and then, invite by referring back to an earlier day's story (engine.recall).
    recall_earlier_stories: bool = True
    # The wording keys the file left out, which took the shipped protocol's ("prompts.confirm",
    # "acknowledgements.neutral", "answers.fillers"), for `companion protocol check`.
    defaulted: tuple[str, ...] = ()

    def wording(self, key: str, **values: object) -> str:
        """Prompt `key` as written in [prompts], `values` filled in (one left out reads as
        nothing): for what is said outside a session, where alternatives do not rotate."""
        return fill(self.prompts[key], **values)

    def instruments_for(self, phase: str, session_kind: str) -> list[Instrument]:
        return [i for i in self.instruments if i.phase == phase and session_kind in i.sessions]


def fill(template: str, **values: object) -> str:
    """A protocol template with `values` filled in; a placeholder that does not apply to this
    template reads as nothing, never a crash."""
    return template.format_map(defaultdict(str, values))


DEFAULT_PROTOCOL = "default"
CONFIRM_CHOICES = (True, False, *POLICIES)


def _confirm_policy(value: bool | str) -> ConfirmPolicy:
    if isinstance(value, bool):  # protocol files before the policy: true = as needed
        return "when_unsure" if value else "never"
    return value  # type: ignore[return-value]  # one of POLICIES, checked by choice()


def default_protocol_text() -> str:
    return resources.files("companion.data").joinpath("default_protocol.toml").read_text("utf-8")


@lru_cache(maxsize=1)
def shipped_protocol() -> Protocol:
    """companion/data/default_protocol.toml: the wording any other file may leave out."""
    source = "default protocol"
    return _protocol(parse_toml(default_protocol_text(), source), source, None)


def load_protocol(path: str | Path | None = None) -> Protocol:
    """Load and validate a protocol file; None or "default" is the shipped protocol."""
    if path is None or str(path) == DEFAULT_PROTOCOL:
        return shipped_protocol()
    file = Path(path)
    return protocol_from(read_toml(file, "protocol file"), str(file))


def parse_protocol(text: str, source: str) -> Protocol:
    return protocol_from(parse_toml(text, source), source)


def protocol_from(data: dict[str, Any], source: str) -> Protocol:
    """A protocol from its parsed TOML; wording it leaves out is the shipped protocol's."""
    return _protocol(data, source, shipped_protocol())


def _protocol(data: dict[str, Any], source: str, base: Protocol | None) -> Protocol:
    """Wording the file leaves out (OPTIONAL_PROMPTS, keys of [acknowledgements] and [answers])
    is `base`'s; None: every key is required (the shipped file itself)."""
    root = Table(data, source)
    root.unknown({"protocol", "matching", "prompts", "acknowledgements", "answers", "instruments",
                  "schedule"})  # fmt: skip
    head = root.sub("protocol")
    values = head.read({
        "id": head.text,
        "version": lambda k: head.integer(k, 1, SQLITE_INT_MAX),
        "title": head.text,
        "condition": lambda k: head.choice(k, CONDITIONS),
        "max_reprompts": lambda k: head.integer(k, 0, 10),
        "follow_up_turns": lambda k: head.integer(k, 0, 10),
        "story_max_seconds": lambda k: head.number(k, 5, 1800),
        "confirm_voice_answers": lambda k: _confirm_policy(head.choice(k, CONFIRM_CHOICES)),
        "keep_audio": head.flag,
        "speaking_rate": lambda k: head.number(k, 0.5, 2.0),
        "sentence_pause_seconds": lambda k: head.number(k, 0.0, 3.0),
        "story_pause_seconds": lambda k: head.number(k, 0.0, 10.0),
        "avoid_repeat_days": lambda k: head.integer(k, 0, 366),
        "recall_earlier_stories": head.flag,
    })  # fmt: skip
    for key in ("id", "version"):
        if key not in values:
            raise head.fail(key, "missing; add it")
    values.setdefault("title", values["id"])

    matching = root.sub("matching")
    weights = matching.read({
        "semantic": lambda k: matching.number(k, 0.0, 1.0),
        "emotion": lambda k: matching.number(k, 0.0, 1.0),
        "emotion_similarity": lambda k: matching.choice(k, EMOTION_METRICS),
    })  # fmt: skip
    if "emotion_similarity" in weights:
        values["emotion_similarity"] = weights.pop("emotion_similarity")
    if weights and sum(weights.values()) <= 0:
        raise matching.fail("semantic", "the weights must not both be 0")
    if "semantic" in weights:
        values["semantic_weight"] = weights["semantic"]
    if "emotion" in weights:
        values["emotion_weight"] = weights["emotion"]

    prompts_table = root.sub("prompts")
    prompts = {}
    for key in REQUIRED_PROMPTS:
        prompts[key] = prompts_table.template(
            key, prompts_table.text(key), PROMPT_PLACEHOLDERS[key]
        )
    defaulted = []
    schedule = parse_schedule(data.get("schedule"), source)
    for key in OPTIONAL_PROMPTS:
        shipped = [base.prompts[key]] if base else []
        if key == "invitation" and schedule.invitation is not None:
            if key in prompts_table and prompts_table.text(key) != schedule.invitation:
                raise prompts_table.fail(key, "differs from [schedule] invitation, where older "
                                              "files set it; keep one")  # fmt: skip
            shipped = [schedule.invitation]  # where files before [prompts] invitation set it
        elif base is not None and key not in prompts_table:
            defaulted.append(f"prompts.{key}")
        text = prompts_table.text(key, *shipped)
        prompts[key] = prompts_table.template(key, text, PROMPT_PLACEHOLDERS[key])
    # [prompts.alternatives]: more wordings of a prompt, said in turn with the main one.
    more = prompts_table.sub("alternatives")
    more.unknown(prompts)
    alternatives = {}
    for key, text in prompts.items():
        extra = more.strings(key, [], allow_empty=True)
        if extra and key in ONE_WORDING:
            raise more.fail(key, "said outside a session, where wordings do not rotate: "
                                 "give one wording, in [prompts]")  # fmt: skip
        for wording in extra:
            more.template(key, wording, PROMPT_PLACEHOLDERS[key])
        alternatives[key] = more.unique(key, (text, *extra))
    follow_ups = prompts_table.strings("follow_ups", [], allow_empty=True)
    for text in prompts_table.unique("follow_ups", follow_ups):
        prompts_table.template("follow_ups", text, PROMPT_PLACEHOLDERS["follow_ups"])
    topics = prompts_table.unique("topics", prompts_table.strings("topics"))
    if base is not None and "recall_when" not in prompts_table:
        defaulted.append("prompts.recall_when")
    recall_when = prompts_table.unique("recall_when", prompts_table.strings(
        "recall_when", *([base.recall_when] if base else [])))
    if len(recall_when) != len(WHEN_BANDS) + 1:
        raise prompts_table.fail("recall_when", f"needs {len(WHEN_BANDS) + 1} wordings: yesterday, "
                                 "two or three days, up to a week, up to two weeks, longer")
    for text in recall_when:
        prompts_table.template("recall_when", text, ())
    # After the known keys: a misspelt prompt reads as "missing", the likelier mistake.
    prompts_table.unknown([*PROMPT_PLACEHOLDERS, "topics", "recall_when", "alternatives"])

    acknowledgements = parse_acknowledgements(root, base.acknowledgements if base else None)
    if base is not None:
        left = [k for k in ACKNOWLEDGEMENT_KEYS if k not in data.get("acknowledgements", {})]
        whole = len(left) == len(ACKNOWLEDGEMENT_KEYS)  # a file from before the table
        defaulted += ["acknowledgements"] if whole else [f"acknowledgements.{k}" for k in left]
    answer_words = parse_answer_words(root, base.answer_words if base else None)
    if base is not None:
        left = [k for k in ANSWER_KEYS if k not in data.get("answers", {})]
        whole = len(left) == len(ANSWER_KEYS)
        defaulted += ["answers"] if whole else [f"answers.{k}" for k in left]

    raw_instruments = root.get("instruments", list, [])
    instruments = tuple(_instrument(raw, source, n) for n, raw in enumerate(raw_instruments))
    ids = [i.id for i in instruments]
    for dup in {i for i in ids if ids.count(i) > 1}:
        raise ConfigError(f"{source}: instruments: id {dup!r} is used twice; make ids unique")

    return Protocol(
        **values,
        prompts=prompts,
        alternatives=alternatives,
        topics=topics,
        source=source,
        acknowledgements=acknowledgements,
        answer_words=answer_words,
        defaulted=tuple(defaulted),
        follow_ups=follow_ups,
        recall_when=recall_when,
        instruments=instruments,
        schedule=schedule,
    )


def _instrument(raw: Any, source: str, n: int) -> Instrument:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: instruments[{n}]: must be a table ([[instruments]])")
    t = Table(raw, source, f"instruments[{n}].")
    t.unknown({"id", "phase", "sessions", "intro", "items", "defaults"})
    inst_id = t.text("id")
    t.where = f"instruments.{inst_id}."
    values = t.read({
        "id": t.text,
        "phase": lambda k: t.choice(k, PHASES),
        "sessions": lambda k: t.strings(k, allowed=SESSION_KINDS),
        "intro": t.text,
        "items": lambda k: t.get(k, list),
        "defaults": lambda k: t.get(k, dict),
    })  # fmt: skip
    defaults, raw_items = values.pop("defaults", {}), values.pop("items", None)
    if not raw_items:
        raise t.fail("items", "needs at least one item ([[instruments.items]])")
    items = []
    for m, raw_item in enumerate(raw_items):
        if not isinstance(raw_item, dict):
            raise t.fail(f"items[{m}]", "must be a table ([[instruments.items]])")
        items.append(_item({**defaults, **raw_item}, source, f"instruments.{inst_id}.items[{m}]."))
    item_ids = [i.id for i in items]
    if len(set(item_ids)) != len(item_ids):
        raise t.fail("items", "item ids must be unique within an instrument")
    return Instrument(**values, items=tuple(items))


def _item(raw: dict[str, Any], source: str, where: str) -> Item:
    t = Table(raw, source, where)
    t.unknown({"id", "type", "text", "min", "max", "anchors"})
    item_id, item_type, text = t.text("id"), t.choice("type", ITEM_TYPES), t.text("text")
    if item_type != "likert":
        return Item(id=item_id, type=item_type, text=text)  # type: ignore[arg-type]
    low, high = t.integer("min", 0, 10, Item.min), t.integer("max", 0, 10, Item.max)
    if not low < high:
        raise t.fail("max", f"scale {low}..{high} must satisfy 0 <= min < max <= 10")
    anchors: dict[int, str] = {}
    raw_anchors = t.get("anchors", (dict, list), {})
    pairs = (
        enumerate(raw_anchors, start=low) if isinstance(raw_anchors, list) else raw_anchors.items()
    )
    for key, label in pairs:
        try:
            point = int(key)
        except ValueError:
            raise t.fail("anchors", f"key {key!r} must be a scale point number") from None
        if not low <= point <= high:
            raise t.fail("anchors", f"point {point} is outside the scale {low}..{high}")
        if not isinstance(label, str) or not label.strip():
            raise t.fail("anchors", f"label for {point} must be a non-empty string")
        anchors[point] = label.strip()
    labels = [label.lower() for label in anchors.values()]
    if len(set(labels)) != len(labels):
        raise t.fail("anchors", "labels must be distinct")
    return Item(id=item_id, type="likert", text=text, min=low, max=high, anchors=anchors)

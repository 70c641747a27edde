"""The study protocol: what the companion says and asks, editable by researchers in TOML.

Loading validates everything up front, so a typo is one clear line naming the
file and field, never a crash halfway through a participant's session.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from companion.errors import ConfigError
from companion.service.schedule import ScheduleConfig, parse_schedule

Condition = Literal["matched", "random", "counterbalanced"]
CONDITIONS = ("matched", "random", "counterbalanced")
PHASES = ("checkin", "post_story", "closing")
SESSION_KINDS = ("daily", "enrolment", "exit")
ITEM_TYPES = ("likert", "yesno", "text")
REQUIRED_PROMPTS = (
    "greeting", "first_greeting", "checkin_intro", "story_invitation", "story_nothing_heard",
    "story_none", "story_intro", "story_outro", "no_stories_left", "instruments_intro",
    "reprompt", "gave_up", "closing", "goodbye",
)  # fmt: skip
# Prompts a protocol may leave out (older protocol files), with the wording used then.
OPTIONAL_PROMPTS = {
    "confirm": "I heard {answer}. Is that right?",
    "confirm_retry": "Sorry about that. Let's try once more.",
}
PLACEHOLDERS = {"name", "topic", "title", "hint", "answer"}


@dataclass(frozen=True)
class Item:
    id: str
    type: Literal["likert", "yesno", "text"]
    text: str
    min: int = 1
    max: int = 5
    anchors: Mapping[int, str] | None = None


@dataclass(frozen=True)
class Instrument:
    id: str
    phase: str
    sessions: tuple[str, ...]
    items: tuple[Item, ...]
    intro: str | None = None


@dataclass(frozen=True)
class Protocol:
    id: str
    version: int
    title: str
    condition: Condition
    max_reprompts: int
    follow_up_turns: int
    story_max_seconds: float
    semantic_weight: float
    emotion_weight: float
    prompts: Mapping[str, str]
    follow_ups: tuple[str, ...]
    topics: tuple[str, ...]
    instruments: tuple[Instrument, ...]
    source: str
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    # Voice mode: read a recognised rating back and ask "is that right?" before storing it.
    confirm_voice_answers: bool = True
    # Voice mode: keep participant turns as 16 kHz WAV files under HOME/audio.
    keep_audio: bool = False

    def instruments_for(self, phase: str, session_kind: str) -> list[Instrument]:
        return [i for i in self.instruments if i.phase == phase and session_kind in i.sessions]


DEFAULT_PROTOCOL = "default"


def default_protocol_text() -> str:
    return resources.files("companion.data").joinpath("default_protocol.toml").read_text("utf-8")


def load_protocol(path: str | Path | None = None) -> Protocol:
    """Load and validate a protocol file; None or "default" is the shipped protocol."""
    if path is None or str(path) == DEFAULT_PROTOCOL:
        return parse_protocol(default_protocol_text(), "default protocol")
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read protocol file ({exc.strerror})") from exc
    return parse_protocol(text, str(file))


class _Fields:
    """Typed access to one TOML table, with errors that name the file and field."""

    def __init__(self, table: Mapping[str, Any], source: str, where: str) -> None:
        self.table, self.source, self.where = table, source, where

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self.where}{key}: {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if key not in self.table:
            if default is ...:
                raise self.fail(key, "missing; add it")
            return default
        value = self.table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
            name = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise self.fail(key, f"must be a {name}, got {value!r}")
        if isinstance(value, str) and not value.strip():
            raise self.fail(key, "must not be empty")
        return value

    def choice(self, key: str, allowed: tuple[str, ...], default: Any = ...) -> str:
        value: str = self.get(key, str, default)
        if value not in allowed:
            raise self.fail(key, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def sub(self, key: str, where: str) -> _Fields:
        table = self.get(key, dict, {})
        return _Fields(table, self.source, where)

    def unknown(self, allowed: set[str]) -> None:
        extra = sorted(set(self.table) - allowed)
        if extra:
            raise self.fail(extra[0], "unknown field; check the spelling")


def parse_protocol(text: str, source: str) -> Protocol:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc}); fix the syntax") from exc
    root = _Fields(data, source, "")
    root.unknown({"protocol", "matching", "prompts", "instruments", "schedule"})
    head = root.sub("protocol", "protocol.")
    head.unknown(
        {"id", "version", "title", "condition", "max_reprompts", "follow_up_turns",
         "story_max_seconds", "confirm_voice_answers", "keep_audio"}
    )  # fmt: skip
    version = head.get("version", int)
    if version < 1:
        raise head.fail("version", "must be 1 or more")
    max_reprompts = head.get("max_reprompts", int, 2)
    follow_up_turns = head.get("follow_up_turns", int, 2)
    for key, value in (("max_reprompts", max_reprompts), ("follow_up_turns", follow_up_turns)):
        if not 0 <= value <= 10:
            raise head.fail(key, "must be between 0 and 10")
    story_max = head.get("story_max_seconds", float, 180.0)
    if not 5 <= story_max <= 1800:
        raise head.fail("story_max_seconds", "must be between 5 and 1800")

    matching = root.sub("matching", "matching.")
    matching.unknown({"semantic", "emotion"})
    semantic = matching.get("semantic", float, 0.6)
    emotion = matching.get("emotion", float, 0.4)
    if semantic < 0 or emotion < 0 or semantic + emotion <= 0:
        raise matching.fail("semantic", "weights must be >= 0 and not both 0")

    prompts_table = root.sub("prompts", "prompts.")
    prompts: dict[str, str] = {}
    for key in REQUIRED_PROMPTS:
        prompts[key] = _checked_template(prompts_table, key, prompts_table.get(key, str))
    for key, default in OPTIONAL_PROMPTS.items():
        prompts[key] = _checked_template(prompts_table, key, prompts_table.get(key, str, default))
    follow_ups = _string_list(prompts_table, "follow_ups", allow_empty=True)
    topics = _string_list(prompts_table, "topics", allow_empty=False)
    prompts_table.unknown(set(REQUIRED_PROMPTS) | set(OPTIONAL_PROMPTS) | {"follow_ups", "topics"})

    raw_instruments = root.get("instruments", list, [])
    instruments = tuple(_instrument(raw, source, n) for n, raw in enumerate(raw_instruments))
    ids = [i.id for i in instruments]
    for dup in {i for i in ids if ids.count(i) > 1}:
        raise ConfigError(f"{source}: instruments: id {dup!r} is used twice; make ids unique")

    return Protocol(
        id=head.get("id", str),
        version=version,
        title=head.get("title", str, head.get("id", str)),
        condition=head.choice("condition", CONDITIONS, "matched"),  # type: ignore[arg-type]
        max_reprompts=max_reprompts,
        follow_up_turns=follow_up_turns,
        story_max_seconds=story_max,
        semantic_weight=semantic,
        emotion_weight=emotion,
        prompts=prompts,
        follow_ups=follow_ups,
        topics=topics,
        instruments=instruments,
        source=source,
        schedule=parse_schedule(data.get("schedule"), source),
        confirm_voice_answers=head.get("confirm_voice_answers", bool, True),
        keep_audio=head.get("keep_audio", bool, False),
    )


def _checked_template(fields: _Fields, key: str, text: str) -> str:
    import string

    for _, name, _, _ in string.Formatter().parse(text):
        if name is not None and name not in PLACEHOLDERS:
            raise fields.fail(key, f"unknown placeholder {{{name}}}; use {sorted(PLACEHOLDERS)}")
    return text


def _string_list(fields: _Fields, key: str, allow_empty: bool) -> tuple[str, ...]:
    values = fields.get(key, list, [] if allow_empty else ...)
    if not values and not allow_empty:
        raise fields.fail(key, "needs at least one entry")
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise fields.fail(key, "every entry must be a non-empty string")
        _checked_template(fields, key, value)
    return tuple(values)


def _instrument(raw: Any, source: str, n: int) -> Instrument:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: instruments[{n}]: must be a table ([[instruments]])")
    fields = _Fields(raw, source, f"instruments[{n}].")
    fields.unknown({"id", "phase", "sessions", "intro", "items", "defaults"})
    inst_id = fields.get("id", str)
    fields.where = f"instruments.{inst_id}."
    sessions = tuple(fields.get("sessions", list, ["daily"]))
    for kind in sessions:
        if kind not in SESSION_KINDS:
            raise fields.fail("sessions", f"{kind!r} is not one of {', '.join(SESSION_KINDS)}")
    defaults = fields.get("defaults", dict, {})
    raw_items = fields.get("items", list)
    if not raw_items:
        raise fields.fail("items", "needs at least one item")
    items = []
    for m, raw_item in enumerate(raw_items):
        if not isinstance(raw_item, dict):
            raise fields.fail(f"items[{m}]", "must be a table ([[instruments.items]])")
        items.append(_item({**defaults, **raw_item}, source, f"instruments.{inst_id}.items[{m}]."))
    item_ids = [i.id for i in items]
    if len(set(item_ids)) != len(item_ids):
        raise fields.fail("items", "item ids must be unique within an instrument")
    intro = fields.get("intro", str, None)
    return Instrument(
        id=inst_id,
        phase=fields.choice("phase", PHASES, "post_story"),
        sessions=sessions,
        items=tuple(items),
        intro=intro,
    )


def _item(raw: dict[str, Any], source: str, where: str) -> Item:
    fields = _Fields(raw, source, where)
    fields.unknown({"id", "type", "text", "min", "max", "anchors"})
    item_id = fields.get("id", str)
    item_type = fields.choice("type", ITEM_TYPES)
    text = fields.get("text", str)
    if item_type != "likert":
        return Item(id=item_id, type=item_type, text=text)  # type: ignore[arg-type]
    low, high = fields.get("min", int, 1), fields.get("max", int, 5)
    if not 0 <= low < high <= 10:
        raise fields.fail("max", f"scale {low}..{high} must satisfy 0 <= min < max <= 10")
    anchors: dict[int, str] = {}
    raw_anchors = fields.get("anchors", (dict, list), {})
    pairs = (
        enumerate(raw_anchors, start=low) if isinstance(raw_anchors, list) else raw_anchors.items()
    )
    for key, label in pairs:
        try:
            point = int(key)
        except ValueError:
            raise fields.fail("anchors", f"key {key!r} must be a scale point number") from None
        if not low <= point <= high:
            raise fields.fail("anchors", f"point {point} is outside the scale {low}..{high}")
        if not isinstance(label, str) or not label.strip():
            raise fields.fail("anchors", f"label for {point} must be a non-empty string")
        anchors[point] = label.strip()
    labels = [label.lower() for label in anchors.values()]
    if len(set(labels)) != len(labels):
        raise fields.fail("anchors", "labels must be distinct")
    return Item(id=item_id, type="likert", text=text, min=low, max=high, anchors=anchors)

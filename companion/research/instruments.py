"""Which answers each report plot shows, read from the protocols recorded in the data.

The rules go by phase and item type; yes/no and free-text items are never plotted.

- Mood: every likert item of every check-in (`checkin`) instrument, one panel per item.
- Post-story empathy: every `post_story` instrument with likert items, one panel per
  instrument showing each session's mean of its answered likert items. The matched-vs-random
  comparison uses each session's mean over all post-story likert items (what the participant's
  preference model learns from).
- Felt understood: every likert item of every `closing` instrument, one panel per item.
- Several protocols (new versions, or merged devices that ran different ones): the union, taken
  in (id, version) order; an item several of them ask keeps the newest version's scale.
- A mean over items with different scales maps each answer linearly onto the first item's scale.
- No protocol recorded (data from before the `protocols` table): the default protocol's roles,
  limited to the instrument items present in `self_reports`, and the page says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from companion.engine.protocol import load_protocol
from companion.engine.record import protocol_definition

Answers = dict[tuple[int, str, str], int]  # (session, instrument, item) -> value


@dataclass(frozen=True)
class ScaleItem:
    instrument: str
    item: str
    low: int
    high: int

    @property
    def key(self) -> str:
        return f"{self.instrument}.{self.item}"


@dataclass(frozen=True)
class Panel:
    """One line plot: a single item, or the mean of several items of one scale."""

    label: str
    items: tuple[ScaleItem, ...]

    @property
    def scale(self) -> tuple[int, int]:
        return self.items[0].low, self.items[0].high

    def values(self, answers: Answers) -> dict[int, float]:
        """Session id -> the item's value, or the mean of the answered items."""
        low, high = self.scale
        wanted = {(i.instrument, i.item): i for i in self.items}
        per_session: dict[int, list[float]] = defaultdict(list)
        for (sid, inst, item), value in answers.items():
            found = wanted.get((inst, item))
            if found is not None:
                share = (value - found.low) / (found.high - found.low)
                per_session[sid].append(low + share * (high - low))
        return {sid: sum(v) / len(v) for sid, v in per_session.items()}


@dataclass(frozen=True)
class Roles:
    mood: tuple[Panel, ...]
    empathy: tuple[Panel, ...]
    understood: tuple[Panel, ...]
    source: str  # where the rules found the instruments, for the page
    notes: tuple[str, ...] = ()

    @property
    def empathy_overall(self) -> Panel | None:
        items = tuple(i for p in self.empathy for i in p.items)
        return Panel("all post-story likert items", items) if items else None


@dataclass(frozen=True)
class Recorded:
    id: str
    version: int
    definition: dict[str, Any]


def _likert(inst: dict[str, Any]) -> list[ScaleItem]:
    return [
        ScaleItem(inst["id"], item["id"], int(item["scale"][0]), int(item["scale"][1]))
        for item in inst.get("items", [])
        if item.get("type") == "likert" and item.get("scale")
    ]


def roles_of(protocols: list[Recorded], source: str, notes: tuple[str, ...] = ()) -> Roles:
    """Apply the rules above to the protocols' instruments."""
    mood: dict[str, ScaleItem] = {}
    understood: dict[str, ScaleItem] = {}
    empathy: dict[str, dict[str, ScaleItem]] = {}
    for proto in sorted(protocols, key=_order):
        for inst in proto.definition.get("instruments", []):
            items = _likert(inst)
            if inst.get("phase") == "checkin":
                mood.update((i.key, i) for i in items)
            elif inst.get("phase") == "closing":
                understood.update((i.key, i) for i in items)
            elif inst.get("phase") == "post_story" and items:
                empathy.setdefault(inst["id"], {}).update((i.key, i) for i in items)
    return Roles(
        mood=tuple(Panel(key, (i,)) for key, i in mood.items()),
        empathy=tuple(
            Panel(f"{inst} (mean of {len(items)} items)", tuple(items.values()))
            for inst, items in empathy.items()
        ),
        understood=tuple(Panel(key, (i,)) for key, i in understood.items()),
        source=source,
        notes=notes,
    )


def choose_roles(
    protocols: list[Recorded], answered: set[tuple[str, str]], used: set[tuple[str, int]]
) -> Roles:
    """Roles from the recorded `protocols`, or from the default protocol limited to the
    `answered` (instrument, item) pairs when none is recorded. `used` are the sessions'
    (protocol id, version) pairs, to name any that were not recorded."""
    if protocols:
        names = ", ".join(f"{p.id} v{p.version}" for p in sorted(protocols, key=_order))
        missing = sorted(used - {(p.id, p.version) for p in protocols})
        notes = tuple(
            f"Sessions ran under protocol {pid} v{version}, which is not recorded in this "
            "database; their answers appear only where their instrument ids match."
            for pid, version in missing
        )
        return roles_of(protocols, f"the protocols recorded in the data: {names}", notes)
    default = load_protocol(None)
    full = roles_of([Recorded(default.id, default.version, protocol_definition(default))], "")

    def present(panels: tuple[Panel, ...]) -> tuple[Panel, ...]:
        out = []
        for panel in panels:
            items = tuple(i for i in panel.items if (i.instrument, i.item) in answered)
            if len(items) == len(panel.items):
                out.append(panel)
            elif items:
                out.append(Panel(f"{items[0].instrument} (mean of {len(items)} items)", items))
        return tuple(out)

    return Roles(
        mood=present(full.mood),
        empathy=present(full.empathy),
        understood=present(full.understood),
        source=(
            "no protocol is recorded in this database (data from an older companion), so the "
            "plots use the default protocol's instruments found in the answers"
        ),
    )


def _order(p: Recorded) -> tuple[str, int]:
    return p.id, p.version

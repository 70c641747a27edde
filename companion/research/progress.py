"""How one device's row may differ between two of that device's exports: merge's rule for
telling progress (the device went on after an export) from a conflict (a value the device
never rewrites has changed).

A device writes most rows once (a turn, an answer, an event, an invitation) and updates a
few columns later, as a session ends or the preference model learns from it. Those columns
are listed in PROGRESS, each with the order its values move in; every other column of every
table is fixed. Comparing the merged row with the same row (device id and source id) in
another export of that device:

- nothing differs: the same row, skipped;
- every differing column moved forward: the export is newer, its values replace the merged;
- every differing column moved back: the export is older, the merged (newer) row is kept;
- anything else (a fixed column differs, a value moved sideways such as one end status for
  another, or some columns forward and some back): a conflict, and the export is refused.

Rows an export adds (new turns and answers of a session merged while it ran) are new ids
and are simply added, so every row reaches the study database once, in any merge order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A column empty until the device sets it, once: never changed after, never emptied again.
FILLED: tuple[tuple[Any, ...], ...] = ((None,),)

# table -> column -> its stages in the order they move (a value in a later stage is further
# along; two values of one stage are not ordered). FILLED: empty, then any one value.
PROGRESS: dict[str, dict[str, tuple[tuple[Any, ...], ...]]] = {
    "sessions": {
        "status": (("running",), ("completed", "interrupted", "aborted")),
        "reason": FILLED,
        "ended_at": FILLED,
    },
    "story_exposures": {"learned_rating": FILLED},
}


@dataclass(frozen=True)
class Verdict:
    """Which differing columns the export has further along (`newer`) or behind (`older`);
    `conflict`: a column whose change progress cannot explain (then the others are moot)."""

    newer: tuple[str, ...] = ()
    older: tuple[str, ...] = ()
    conflict: str | None = None


def _stage(stages: tuple[tuple[Any, ...], ...], value: Any) -> int | None:
    """The value's stage; a FILLED column's set value is the stage after the empty one."""
    for n, stage in enumerate(stages):
        if value in stage:
            return n
    return len(stages) if stages is FILLED and value is not None else None


def compare(table: str, merged: Mapping[str, Any], row: Mapping[str, Any]) -> Verdict:
    """Compare the export's `row` with the `merged` copy, over the export's columns."""
    rules = PROGRESS.get(table, {})
    newer: list[str] = []
    older: list[str] = []
    for column, value in row.items():
        held = merged[column]
        if held == value:
            continue
        stages = rules.get(column)
        was = None if stages is None else _stage(stages, held)
        now = None if stages is None else _stage(stages, value)
        if was is None or now is None or was == now:
            return Verdict(conflict=column)
        (newer if now > was else older).append(column)
    if newer and older:  # part of the row went on, part went back: not one device's history
        return Verdict(conflict=older[0])
    return Verdict(tuple(newer), tuple(older))

"""The spoken-answer benchmark's figures per voice family and room, by kind of answer.

What the issue's goals read: single numbers and the protocol's phrase forms heard right the
first time, numbers said with a doubt refused (never a value), numbers heard as a command
(skip or repeat), and wrong values stored by a session under the shipped read-back policy.
"""

from __future__ import annotations

from collections import defaultdict

from companion.engine.answers import NUMBER_WORDS
from tests.bench.answer_tuning import simulate

ROOMS = ("clean", "20dB", "10dB")
KINDS = ("number", "form", "hedged")


def family(r: dict) -> str:
    return r.get("family") or "espeak-ng"  # runs saved before the neural voices


def kind(r: dict) -> str:
    """number: a bare number; form: a number in a phrase form the parser accepts; hedged: a
    number with a doubt (to be refused); other: anchors, commands, unclear, yes/no."""
    if r["group"] == "confirm":
        return "other"
    words = r["phrase"].split()
    if not any(w in NUMBER_WORDS for w in words):
        return "other"
    if len(words) == 1:
        return "number"
    return "form" if r["expected"].startswith("value:") else "hedged"


def as_command(r: dict) -> bool:
    """A number (bare, in a form, or hedged) heard as skip or repeat."""
    return kind(r) != "other" and r["got"] in ("skip", "repeat")


def figures(rows: list[dict], policy) -> dict:
    """Per room (and all rooms): the share heard right of each kind, the count of numbers
    heard as commands, and wrong values stored by a simulated session under `policy`."""
    out: dict[str, dict] = {}
    for room in ("all", *ROOMS):
        part = [r for r in rows if room in ("all", r["room"])]
        if not part:
            continue
        by_kind = defaultdict(list)
        for r in part:
            by_kind[kind(r)].append(r)
        res: dict = {"n": {k: len(by_kind[k]) for k in KINDS}}
        for k in KINDS:
            rs = by_kind[k]
            res[k] = sum(r["got"] == r["expected"] for r in rs) / len(rs) if rs else None
        res["hedged_as_value"] = sum(r["got"].startswith("value:") for r in by_kind["hedged"])
        res["as_command"] = sum(as_command(r) for r in part)
        res["wrong_stored"] = simulate(part, policy)["wrong_stored"]
        out[room] = res
    return out


def show_families(state: str, rows: list[dict], policy) -> dict:
    """Print and return the figures of each voice family in `rows`."""
    res = {}
    for fam in sorted({family(r) for r in rows}):
        f = figures([r for r in rows if family(r) == fam], policy)
        res[fam] = f
        print(f"  [{fam} {state}]")
        for room, x in f.items():
            shares = "  ".join(
                f"{k} {x[k]:.1%} (n={x['n'][k]})" if x[k] is not None else f"{k} -" for k in KINDS
            )
            print(f"    {room:5} heard right: {shares}; hedged heard as a value "
                  f"{x['hedged_as_value']}; numbers heard as a command {x['as_command']}; "
                  f"wrong values stored {x['wrong_stored']}")  # fmt: skip
    return res

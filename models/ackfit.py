"""Fitting the acknowledgement rule (`companion.engine.ackrule`) to labelled probabilities.
Build-time: `models/calibrate_ack.py` runs it on the dev split; the device only loads the rule.

One threshold per level, pooled over its candidates: the exact feeling's probability, the
likeliest family's summed probability, the likeliest valence group's summed probability, and
the family again for the stories still unnamed whose family no valence phrase covers (tender,
anticipation). Per emotion thresholds (86 stories each) had to be so cautious that half the
stories heard nothing; four pooled numbers are fitted on thousands. The fit names as many
stories as it can while each level, and everything named, is right at least `target` of the
time on the fitting rows; it then gives up at most `spare` of that coverage for naming more
specifically (the exact feeling before a family, a family before a valence). `target` sits
above the goal (`precision`) by what an inner cross-validation shows is needed for the rule to
stay precise on stories it never saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from companion.emotions import EMOTIONS
from companion.engine.ackrule import (
    LATE_FAMILIES,
    LEVELS,
    Decision,
    decide,
    score,
    strength,
    truth_at,
)

# Candidate thresholds of the exact and family levels; the valence cut is found exactly.
GRID: tuple[float, ...] = tuple(round(0.3 + 0.01 * i, 2) for i in range(70))
NEVER = 2.0  # a cut no probability reaches: the level names nothing
# A level that names anything must do so for at least this many fitting rows: fewer is luck.
MIN_SUPPORT = 12
# Coverage traded for more specific naming (a fraction of all rows).
SPARE = 0.05
# Training precisions tried by the inner cross-validation, lowest (most coverage) first.
TARGETS: tuple[float, ...] = (0.9, 0.91, 0.92, 0.93, 0.94, 0.95)


def _levels(
    rows: Sequence[Mapping[str, float]], truths: Sequence[str]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per level: each row's strength (top mass) and whether naming its top would be right; and
    (key "late") whether its likeliest family is one the valence level cannot cover."""
    out = {}
    for level in LEVELS:
        tops = [strength(p, level) for p in rows]
        mass = np.array([m for _, m in tops], np.float64)
        ok = np.array([t == truth_at(level, y) for (t, _), y in zip(tops, truths, strict=True)])
        out[level] = (mass, ok)
        if level == "family":
            out["late"] = (np.array([t in LATE_FAMILIES for t, _ in tops]), ok)
    return out


def _last_cut(
    m: np.ndarray, ok: np.ndarray, named: tuple[int, int], target: float
) -> tuple[float, int, int]:
    """The lowest cut on `m` (sorted, strongest first) naming its rows while they, and everything
    named (`named` = (rows, right) before them), stay precise to `target`: the cut, the rows it
    names, how many right. The rows must be precise on their own: precise rows elsewhere never
    pay for a cut whose stories are mostly misnamed."""
    c = np.cumsum(ok, dtype=np.int64)
    k = np.arange(1, len(m) + 1)
    fine = (c >= target * k) & (named[1] + c >= target * (named[0] + k))
    fine &= (k >= MIN_SUPPORT) & np.r_[m[1:] < m[:-1], True]  # a cut between distinct values
    if not fine.any():
        return NEVER, 0, 0
    n = int(np.flatnonzero(fine).max()) + 1
    return float(m[n - 1]), n, int(c[n - 1])


def _candidates(strong: Mapping[str, tuple[np.ndarray, np.ndarray]], target: float):
    """Every (coverage, exact named, family named, cuts) whose levels are all precise."""
    (me, oke), (mf, okf), (mv, okv) = (strong[level] for level in LEVELS)
    late = strong["late"][0]
    order = np.argsort(-mv, kind="stable")  # sorted once: each valence cut reads a subset
    me, oke, mf, okf, mv, okv, late = (a[order] for a in (me, oke, mf, okf, mv, okv, late))
    out = []
    for te in (*GRID, NEVER):
        ne = me >= te
        he, n_e = int(oke[ne].sum()), int(ne.sum())
        if n_e and (n_e < MIN_SUPPORT or he < target * n_e):
            continue
        for tf in (*GRID, NEVER):
            nf = ~ne & (mf >= tf)
            hf, n_f = int(okf[nf].sum()), int(nf.sum())
            if n_f and (n_f < MIN_SUPPORT or hf < target * n_f):
                continue
            left = ~ne & ~nf
            named = (n_e + n_f, he + hf)
            tv, n_v, hv = _last_cut(mv[left], okv[left], named, target)
            if named[0] and not n_v and named[1] < target * named[0]:
                continue
            named = (named[0] + n_v, named[1] + hv)
            # the families valence cannot cover, named late among the rows still unnamed
            rest = np.flatnonzero(left)[n_v:]
            rest = rest[late[rest]]
            rest = rest[np.argsort(-mf[rest], kind="stable")]
            tl, n_l, _ = _last_cut(mf[rest], okf[rest], named, target)
            out.append((named[0] + n_l, n_e, n_f + n_l, (te, tf, tv, tl)))
    return out


def fit(
    rows: Sequence[Mapping[str, float]],
    truths: Sequence[str],
    target: float,
    spare: float = SPARE,
) -> dict[str, Any]:
    """The pooled thresholds that name the most rows with every level precise to `target`
    (on these rows), made more specific where that costs at most `spare` of the rows."""
    found = _candidates(_levels(rows, truths), target)
    most = max(c[0] for c in found)
    near = [c for c in found if c[0] >= most - spare * len(rows)]
    _, _, _, cuts = max(near, key=lambda c: (2 * c[1] + c[2], c[0]))
    rule: dict[str, Any] = {"target": target, "spare": spare, "min_support": MIN_SUPPORT}
    for level, cut in zip((*LEVELS, "family_late"), cuts, strict=True):
        # rounded down: rounding up would drop the rows at the cut
        rule[level] = None if cut >= NEVER else float(np.floor(cut * 1e6) / 1e6)
    return rule


def folds_of(truths: Sequence[str], folds: int) -> list[int]:
    """A fold for each row, stratified by its emotion (deterministic: the rows' own order)."""
    seen: dict[str, int] = {}
    out = []
    for t in truths:
        out.append(seen.get(t, 0) % folds)
        seen[t] = seen.get(t, 0) + 1
    return out


def cross_validate(
    rows: Sequence[Mapping[str, float]],
    truths: Sequence[str],
    fold_of: Sequence[int],
    fitter: Any,
) -> tuple[list[Decision], list[dict[str, Any]], list[dict[str, float | int | None]]]:
    """Each row's decision by a rule `fitter(rows, truths)` fitted without its fold; each fold's
    rule and score."""
    held: list[Decision] = [Decision("neutral")] * len(rows)
    rules, per_fold = [], []
    for k in sorted(set(fold_of)):
        train = [i for i, f in enumerate(fold_of) if f != k]
        test = [i for i, f in enumerate(fold_of) if f == k]
        rule = fitter([rows[i] for i in train], [truths[i] for i in train])
        for i in test:
            held[i] = decide(rule, rows[i])
        rules.append(rule)
        per_fold.append(score([held[i] for i in test], [truths[i] for i in test]))
    return held, rules, per_fold


def precise(result: Mapping[str, float | int | None], precision: float) -> bool:
    """Whether every level that named something, and everything named, was right at least
    `precision` of the time."""
    rights = [result[f"right_{level}"] for level in LEVELS] + [result["right_named"]]
    return all(r is None or r >= precision for r in rights)


def choose_target(
    rows: Sequence[Mapping[str, float]],
    truths: Sequence[str],
    precision: float,
    folds: int = 4,
    spare: float = SPARE,
) -> float:
    """The lowest training precision whose rules are still precise to `precision` on the rows
    an inner cross-validation held out (the highest tried if none is)."""
    fold_of = folds_of(truths, folds)
    for target in TARGETS:
        if target < precision:
            continue
        held, _, _ = cross_validate(
            rows, truths, fold_of, lambda r, t, target=target: fit(r, t, target, spare)
        )
        if precise(score(held, truths), precision):
            return target
    return TARGETS[-1]


def calibrate(
    rows: Sequence[Mapping[str, float]], truths: Sequence[str], precision: float,
    spare: float = SPARE,
) -> dict[str, Any]:  # fmt: skip
    """The whole fitting: the training precision chosen by an inner cross-validation, then the
    thresholds fitted on every row. An outer cross-validation of this measures both."""
    rule = fit(rows, truths, choose_target(rows, truths, precision, spare=spare), spare)
    rule["precision"] = precision
    return rule


def emotions_of(probs: np.ndarray) -> list[dict[str, float]]:
    """Probability rows (in EMOTIONS order) as the mappings the rule reads."""
    return [dict(zip(EMOTIONS, map(float, p), strict=True)) for p in probs]

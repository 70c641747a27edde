"""The spoken-answer benchmark's judgement and policy simulation, apart from decoding.

Pure over the per-clip rows bench_answers.py saves: outcomes, ROC AUC, the simulated session
under a read-back policy, the channel's judgement again from saved features, and fitting the
confidence and sweeping its bars on the tuning voices.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from companion.voice.channels import VoiceSettings  # noqa: E402
from tests.bench.answer_corpus import half  # noqa: E402


def outcome(r: dict) -> str:
    if r["got"] == r["expected"]:
        return "right"
    if r["got"] == "unclear":
        return "not heard"
    return "wrong"


def auc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def simulate(rows: list[dict], policy, max_reprompts: int = 2,
             replies_heard: bool = False) -> dict:  # fmt: skip
    """Each clip opens an item; a retry is the next clip of the same phrase and room.

    A read-back is answered truthfully: "yes"-like when the value was heard right, "no"-like
    when not, each reply one of the corpus's read-back clips of the same room (in turn), as
    the recogniser heard it. Only a reply heard as yes stores the value (Session.confirmed):
    a "no" heard as yes stores a wrong value, an unheard reply asks the item again. Returns
    wrong values stored and participant turns (read-back replies included) per item that
    meant a value, and how many of the wrong values were stored after a read-back (a "no"
    heard as yes: no read-back threshold prevents those).
    """
    by_key: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    replies: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in rows:
        by_key[(r["group"], r["phrase"], r["room"])].append(r)
        if r["group"] == "confirm" and r["expected"].startswith("value:"):
            replies[(r["room"], int(r["expected"].split(":")[1]))].append(r)
    used: Counter = Counter()

    def read_back_heard_yes(room: str, truth: bool) -> bool:
        pool = replies.get((room, int(truth)))
        if not pool or replies_heard:  # the reply taken as heard (the earlier simulation)
            return truth
        r = pool[used[(room, truth)] % len(pool)]
        used[(room, truth)] += 1
        return r["got"] == "value:1"

    wrong = turns = items = stored = confirmed_wrong = 0
    for key, variants in by_key.items():
        if key[0] == "confirm":
            continue
        for start in range(len(variants)):
            unclear = repeats = n_turns = 0
            k = start
            while True:
                r = variants[k % len(variants)]
                k += 1
                n_turns += 1
                got = r["got"]
                if got.startswith("value:"):
                    value = int(got.split(":")[1])
                    if policy(r["group"], value, r["conf"], r["text"]):
                        n_turns += 1
                        if read_back_heard_yes(r["room"], got == r["expected"]):
                            stored += 1
                            wrong += got != r["expected"]
                            confirmed_wrong += got != r["expected"]
                            break
                        unclear += 1
                    else:
                        stored += 1
                        wrong += got != r["expected"]
                        break
                elif got == "skip" or got == r["expected"]:
                    break  # skipped, or a repeat request that was heard as one
                elif got == "repeat" and repeats < max_reprompts:
                    repeats += 1
                else:
                    unclear += 1
                if unclear > max_reprompts:
                    break
            if r["expected"].startswith("value:"):
                items += 1
                turns += n_turns
    return {"wrong_stored": wrong, "turns_per_item": turns / max(items, 1), "items": items,
            "wrong_after_read_back": confirmed_wrong}  # a "no" heard as yes  # fmt: skip


def oracle(rows: list[dict]) -> list[dict]:
    """The rows judged by a perfect confidence: every answer the recogniser decoded right is
    stored without a read-back, every other one is not heard (asked again). No confidence or
    read-back policy can need fewer turns from the same decodes: the floor set by the
    recogniser itself."""
    out = []
    for r in rows:
        r = dict(r)
        if r["group"] != "confirm":
            right = r["got_raw"] == r["expected"]
            r["got"], r["conf"] = (r["got_raw"], 1.0) if right else ("unclear", None)
        out.append(r)
    return out


def saved_features(r: dict):
    """A saved row's confidence features. Runs saved before a feature existed have fewer (the
    missing ones take their defaults); runs saved with the phone loop have its `loop_ratio`
    last (weight 0 when it was dropped), left out."""
    from companion.voice import confidence

    return confidence.Features(*r["features"][: len(confidence.NAMES)])


def rejudge(rows: list[dict], intercept: float, weights: tuple[float, ...],
            reject: float, reject_clean: float | None = None) -> list[dict]:  # fmt: skip
    """The channel's judgement again from the saved features (with the turn's SNR), and the
    session's of a command (confirm.command_heard)."""
    from companion.engine.confirm import command_heard
    from companion.voice import confidence

    clean = reject if reject_clean is None else reject_clean

    gate = VoiceSettings().min_answer_snr_db
    out = []
    for r in rows:
        r = dict(r)
        if r["features"] and r["raw"]:
            r["conf"] = confidence.probability(saved_features(r), weights, intercept)
            bar = confidence.reject_below(r["snr"], reject, clean)
            heard = r["conf"] >= bar and r["snr"] >= gate
            r["got"] = r["got_raw"] if heard else "unclear"
            if r["got"] in ("skip", "repeat") and not command_heard(r["conf"]):
                r["got"] = "unclear"  # as Session.ask does
            r["text"] = r["raw"] if heard else ""
            r["conf"] = r["conf"] if heard else None
        out.append(r)
    return out


def calibrate(rows: list[dict], voices: frozenset[str] | None = None) -> tuple[float, list[float]]:
    """Logistic regression (L2, gradient descent) of heard-right on the features, tuning voices
    (or only `voices`)."""
    from dataclasses import astuple

    import numpy as np

    gate = VoiceSettings().min_answer_snr_db  # answers in louder noise are never scored
    keep = voices if voices is not None else frozenset(r["voice"] for r in rows
                                                       if half(r["voice"]) == "tuning")  # fmt: skip
    fit = [r for r in rows if r["features"] and r["raw"] and r["voice"] in keep]
    fit = [r for r in fit if r["snr"] >= gate]
    X = np.array([astuple(saved_features(r)) for r in fit], dtype=float)
    y = np.array([r["got_raw"] == r["expected"] for r in fit], dtype=float)
    mu, sd = X.mean(0), X.std(0) + 1e-9
    Z = (X - mu) / sd
    w, b = np.zeros(X.shape[1]), 0.0
    for _ in range(5000):
        g = 1 / (1 + np.exp(-(Z @ w + b))) - y
        w -= 0.2 * (Z.T @ g / len(y) + 0.01 * w)
        b -= 0.2 * g.mean()
    weights = w / sd
    return float(b - weights @ mu), [float(x) for x in weights]


def lovo_auc(rows: list[dict]) -> float | None:
    """ROC AUC of the confidence on a voice it was not fitted on: each tuning voice's answers
    above the noise gate scored by weights fitted on the other tuning voices, pooled."""
    from companion.voice import confidence

    gate = VoiceSettings().min_answer_snr_db
    tune = [r for r in rows if half(r["voice"]) == "tuning" and r["features"] and r["raw"]
            and r["snr"] >= gate and r["got_raw"] != "unclear"]  # fmt: skip
    voices = sorted({r["voice"] for r in tune})
    pos: list[float] = []
    neg: list[float] = []
    for left in voices:
        b, w = calibrate(tune, frozenset(v for v in voices if v != left))
        for r in tune:
            if r["voice"] == left:
                p = confidence.probability(saved_features(r), tuple(w), b)
                (pos if r["got_raw"] == r["expected"] else neg).append(p)
    return auc(pos, neg)


def sweep(rows: list[dict], intercept: float, weights: tuple[float, ...]) -> tuple[float, float]:
    """On the tuning voices: heard-wrong, wrong stored and turns per item by reject and
    read-back threshold; the pair with no wrong value stored and the fewest turns; the
    heard phrases still wrong above that read-back threshold (confusable candidates).
    Returns the chosen bars (reject_below, reject_below_clean)."""
    from companion.engine.confirm import needs_confirmation

    tune = [r for r in rows if half(r["voice"]) == "tuning"]
    best = None
    for rej in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        for rej_clean in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
            judged = rejudge(tune, intercept, weights, rej, rej_clean)
            c = Counter(outcome(r) for r in judged if r["group"] != "confirm")
            n = max(1, sum(c.values()))
            clean = Counter(outcome(r) for r in judged
                            if r["group"] != "confirm" and r["room"] == "clean")  # fmt: skip
            line = [f"  reject<{rej:.2f} (clean <{rej_clean:.2f}): wrong {c['wrong'] / n:.1%} "
                    f"unheard {c['not heard'] / n:.1%} clean unheard "
                    f"{clean['not heard'] / max(1, sum(clean.values())):.1%}"]  # fmt: skip
            for t in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99):
                if t < max(rej, rej_clean):
                    continue
                pol = lambda g, v, c, x, t=t: needs_confirmation("when_unsure", x, c, t)  # noqa: E731
                sim = simulate(judged, pol)
                line.append(f"<{t}: {sim['wrong_stored']}/{sim['turns_per_item']:.2f}")
                # no wrong value stored, then clean answers heard (goal: <= 1 % not), then turns
                clean_unheard = clean["not heard"] / max(1, sum(clean.values()))
                key = (sim["wrong_stored"], clean_unheard > 0.01, sim["turns_per_item"])
                if best is None or key < best[0]:
                    best = (key, rej, rej_clean, t)
            print(" ".join(line))
    assert best is not None
    (_, _, turns), rej, rej_clean, t = best
    print(f"  best on the tuning voices: reject_below = {rej}, reject_below_clean = {rej_clean}, "
          f"read-back threshold {t} ({turns:.2f} turns)")  # fmt: skip
    judged = rejudge(tune, intercept, weights, rej, rej_clean)
    for lower in (0.8, 0.85, 0.9, 0.95):
        # A lower read-back threshold, with the phrases heard wrong above it read back always
        # (the fit's `confusable`): fewer turns if it still stores no wrong value.
        heard: dict[str, Counter] = defaultdict(Counter)
        for r in judged:
            if r["got"] != "unclear" and r["conf"] >= lower and r["group"] != "confirm":
                heard[r["text"]][outcome(r)] += 1
        often = {x: c for x, c in heard.items() if c["wrong"] >= 1}

        def pol(g, v, c, x, t=lower, often=often):
            return c is None or x in often or c < t

        sim = simulate(judged, pol)
        print(f"  THRESHOLD {lower}: wrong though sure (tuning voices) "
              + ", ".join(f"{x!r} {c['wrong']}/{sum(c.values())}" for x, c in sorted(often.items()))
              + f"; with them as CONFUSABLE: wrong stored {sim['wrong_stored']}, "
              f"turns/item {sim['turns_per_item']:.2f}")  # fmt: skip
    return rej, rej_clean


CV_THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99)


def confusable_above(judged: list[dict], threshold: float) -> frozenset[str]:
    """The heard phrases that were wrong at least once at or above `threshold`."""
    return frozenset(r["text"] for r in judged
                     if r["group"] != "confirm" and r["got"] != "unclear"
                     and r["conf"] >= threshold and outcome(r) == "wrong")  # fmt: skip


def rule(threshold: float, confusable: frozenset[str]):
    """The read-back rule as the simulation calls it (confirm.needs_confirmation's logic)."""

    def decide(g: str, v: int, c: float | None, x: str) -> bool:
        return c is None or x in confusable or c < threshold

    return decide


def cross_validate(rows: list[dict], reject: float, reject_clean: float,
                   with_confusable: bool = True) -> dict:  # fmt: skip
    """Leave one tuning voice out: fit the confidence on the other tuning voices and, for each
    read-back threshold, take as CONFUSABLE the phrases heard wrong above it there; simulate
    the left-out voice. Chosen: the lowest threshold that, like every higher one, stores no wrong
    value without a read-back on any left-out voice (None: none does; read every answer back).
    Values stored after a "no" heard as yes are counted apart: no threshold prevents them."""
    voices = sorted({r["voice"] for r in rows if half(r["voice"]) == "tuning"})
    table: dict[float, dict] = {t: {"unread": {}, "read_back": {}, "turns": 0.0, "items": 0}
                                for t in CV_THRESHOLDS}  # fmt: skip
    for left in voices:
        train_voices = frozenset(v for v in voices if v != left)
        b, w = calibrate(rows, train_voices)
        train = rejudge([r for r in rows if r["voice"] in train_voices], b, tuple(w),
                        reject, reject_clean)  # fmt: skip
        test = rejudge([r for r in rows if r["voice"] == left], b, tuple(w), reject, reject_clean)
        for t in CV_THRESHOLDS:
            conf = confusable_above(train, t) if with_confusable else frozenset()
            sim = simulate(test, rule(t, conf))
            table[t]["unread"][left] = sim["wrong_stored"] - sim["wrong_after_read_back"]
            table[t]["read_back"][left] = sim["wrong_after_read_back"]
            table[t]["turns"] += sim["turns_per_item"] * sim["items"]
            table[t]["items"] += sim["items"]
    for row in table.values():
        row["turns_per_item"] = row["turns"] / max(1, row["items"])
    # The lowest threshold from which on every higher one is safe too: what the most
    # demanding left-out voice needs.
    best = None
    for t in reversed(CV_THRESHOLDS):
        if any(table[t]["unread"].values()):
            break
        best = t
    return {"table": table, "threshold": best}


def show_cross_validation(rows: list[dict], reject: float,
                          reject_clean: float) -> tuple[float, frozenset[str]] | None:  # fmt: skip
    """Print the leave-one-voice-out table, with and without CONFUSABLE phrases, and the rule
    it chooses (CONFUSABLE then taken from every tuning voice, the confidence refitted).
    Returns the rule with them (read-back threshold, confusable phrases); None: no threshold
    is safe on every left-out voice."""
    chosen = None
    for with_conf in (True, False):
        cv = cross_validate(rows, reject, reject_clean, with_conf)
        print(f"  leave one tuning voice out, {'with' if with_conf else 'no'} CONFUSABLE "
              "(wrong stored on the left-out voices without / after a read-back):")  # fmt: skip
        for t, row in cv["table"].items():
            bad = {v: n for v, n in row["unread"].items() if n}
            print(
                f"    THRESHOLD {t}: {sum(row['unread'].values())} {bad or ''} / "
                f"{sum(row['read_back'].values())}; turns/item {row['turns_per_item']:.2f}"
            )
        t = cv["threshold"]
        if t is None:
            print("    no threshold stores 0 without a read-back on every left-out voice")
            continue
        b, w = calibrate(rows)
        judged = rejudge([r for r in rows if half(r["voice"]) == "tuning"], b, tuple(w),
                         reject, reject_clean)  # fmt: skip
        conf = confusable_above(judged, t) if with_conf else frozenset()
        print(f"    chosen: read_back_below = {t}, confusable = {sorted(conf)}")
        if with_conf:
            chosen = (t, conf)
    return chosen


def fit_record(fitted_by: str, rows: list[dict], intercept: float, weights: list[float],
               reject: float, reject_clean: float, clean_from_db: float,
               read_back: tuple[float, frozenset[str]]) -> dict:  # fmt: skip
    """What bench_answers.py --write saves as companion/data/answer_confidence.json
    (confirm.parse_fit reads it), rounded as the numbers are shown."""
    from companion.voice import confidence

    gate = VoiceSettings().min_answer_snr_db
    voices = sorted({r["voice"] for r in rows if half(r["voice"]) == "tuning"})
    answers = sum(bool(r["features"] and r["raw"]) and r["snr"] >= gate for r in rows
                  if r["voice"] in voices)  # fmt: skip
    auc_out = lovo_auc(rows)
    return {
        "fitted_by": fitted_by,
        "fitted_on": f"{answers} answers above the noise gate, tuning voices {', '.join(voices)}",
        "features": list(confidence.NAMES),
        "intercept": round(intercept, 4),
        "weights": [round(w, 4) for w in weights],
        "reject_below": reject,
        "clean_from_db": clean_from_db,
        "reject_below_clean": reject_clean,
        "read_back_below": read_back[0],
        "command_below": confidence.fitted().command_below,  # not swept: stays as shipped
        "confusable": sorted(read_back[1]),
        "leave_one_voice_out_auc": None if auc_out is None else round(auc_out, 3),
    }

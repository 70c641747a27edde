"""A self-contained HTML study report with plots, for one device or a merged study.

Reads the database read-only. The page embeds its PNGs (also written beside it)
and references nothing over the network, so it can be mailed or archived as is.
Statistics are plain functions, separate from the drawing.
"""

from __future__ import annotations

import base64
import html
import logging
import math
import os
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from companion.errors import CompanionError

log = logging.getLogger(__name__)

# Two-sided 95 % t critical values for df 1..30; beyond, 1.96 + 2.4/df is within 0.005.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
HELD, INTERRUPTED, MISSED = 2, 1, 0
COLOURS = {HELD: "#2e7d32", INTERRUPTED: "#f9a825", MISSED: "#c62828"}


class ReportError(CompanionError):
    """The database cannot be reported on."""


@dataclass(frozen=True)
class ReportConfig:
    """Which instruments the plots use; None means the default protocol's ids."""

    mood: tuple[str, str] | None = None  # (instrument, item)
    empathy_instrument: str | None = None
    understood: tuple[str, str] | None = None


@dataclass(frozen=True)
class MeanCI:
    mean: float
    low: float
    high: float
    n: int


def mean_ci(values: list[float]) -> MeanCI | None:
    """Mean with a t-based 95 % confidence interval (half-width 0 for n = 1)."""
    n = len(values)
    if n == 0:
        return None
    mean = sum(values) / n
    if n == 1:
        return MeanCI(mean, mean, mean, 1)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    df = n - 1
    t = _T95[df - 1] if df <= 30 else 1.96 + 2.4 / df
    half = t * sd / math.sqrt(n)
    return MeanCI(mean, mean - half, mean + half, n)


@dataclass(frozen=True)
class SessionRow:
    id: int
    participant: str
    status: str
    local_date: date
    minutes: float | None
    condition: str | None


@dataclass(frozen=True)
class StudyData:
    sessions: tuple[SessionRow, ...]
    answers: dict[tuple[int, str, str], int]  # (session, instrument, item) -> value

    @property
    def participants(self) -> list[str]:
        return sorted({s.participant for s in self.sessions})

    def first_day(self, participant: str) -> date:
        return min(s.local_date for s in self.sessions if s.participant == participant)

    def study_day(self, s: SessionRow) -> int:
        return (s.local_date - self.first_day(s.participant)).days + 1


def load(path: Path) -> StudyData:
    if not path.is_file():
        raise ReportError(f"{path}: no database here; check --home or --db")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT s.id, s.participant_id, s.status, s.local_date, s.started_at, s.ended_at, "
            "(SELECT e.condition FROM story_exposures e WHERE e.session_id = s.id LIMIT 1) "
            "FROM sessions s ORDER BY s.id"
        ).fetchall()
        answers = conn.execute(
            "SELECT session_id, instrument, item, value FROM self_reports "
            "WHERE value IS NOT NULL AND status = 'answered'"
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"{path}: not a companion or study database ({exc})") from exc
    finally:
        conn.close()
    sessions = []
    for sid, pid, status, local, started, ended, condition in rows:
        minutes = None
        if started and ended:
            delta = datetime.fromisoformat(ended) - datetime.fromisoformat(started)
            minutes = delta.total_seconds() / 60
        sessions.append(SessionRow(sid, pid, status, date.fromisoformat(local), minutes, condition))
    return StudyData(tuple(sessions), {(s, i, it): v for s, i, it, v in answers})


def adherence(data: StudyData) -> dict[str, list[int]]:
    """Per participant, one code per study day: held, interrupted or missed (no session)."""
    out = {}
    for pid in data.participants:
        mine = [s for s in data.sessions if s.participant == pid]
        days = max(data.study_day(s) for s in mine)
        grid = [MISSED] * days
        for s in mine:
            code = {"completed": HELD, "missed": MISSED}.get(s.status, INTERRUPTED)
            grid[data.study_day(s) - 1] = max(grid[data.study_day(s) - 1], code)
        out[pid] = grid
    return out


def per_session(data: StudyData, instrument: str, item: str | None) -> dict[int, float]:
    """Session id -> the item's value, or the mean of the instrument's items."""
    sums: dict[int, list[int]] = defaultdict(list)
    for (sid, inst, it), value in data.answers.items():
        if inst == instrument and (item is None or it == item):
            sums[sid].append(value)
    return {sid: sum(v) / len(v) for sid, v in sums.items()}


def _png(fig, path: Path) -> Path:
    fig.savefig(path, format="png", dpi=96, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _trend(data: StudyData, values: dict[int, float], ylabel: str, title: str, path: Path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    by_day: dict[int, list[float]] = defaultdict(list)
    for pid in data.participants:
        pts = sorted(
            (data.study_day(s), values[s.id])
            for s in data.sessions
            if s.participant == pid and s.id in values
        )
        for d, v in pts:
            by_day[d].append(v)
        if pts:
            ax.plot(*zip(*pts, strict=True), marker=".", alpha=0.35, linewidth=1, label=pid)
    if by_day:
        days = sorted(by_day)
        ax.plot(days, [sum(by_day[d]) / len(by_day[d]) for d in days], color="black",
                linewidth=2.2, label="mean")  # fmt: skip
    ax.set(xlabel="study day", ylabel=ylabel, title=title, ylim=(0.8, 5.2))
    if len(data.participants) <= 12:
        ax.legend(fontsize=7, ncol=4, loc="lower right")
    fig.tight_layout()
    return _png(fig, path)


def plot_all(data: StudyData, out: Path, config: ReportConfig) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    mood = config.mood or ("mood", "valence")
    empathy_inst = config.empathy_instrument or "story_empathy"
    understood = config.understood or ("felt_understood", "felt_understood")
    plots: dict[str, Path] = {}

    grid = adherence(data)
    width = max(len(g) for g in grid.values())
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.3 * len(grid)))
    matrix = [g + [-1] * (width - len(g)) for g in grid.values()]
    cmap = ListedColormap(["#ffffff", COLOURS[MISSED], COLOURS[INTERRUPTED], COLOURS[HELD]])
    ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=-1.5, vmax=2.5, interpolation="nearest")
    ax.set_yticks(range(len(grid)), list(grid))
    ax.set_xticks(range(0, width, max(1, width // 15)), [str(d + 1) for d in range(0, width,
                  max(1, width // 15))])  # fmt: skip
    ax.set_xlabel("study day")
    ax.set_title("Adherence", loc="left")
    labels = {HELD: "held", INTERRUPTED: "interrupted", MISSED: "missed"}
    fig.legend(handles=[Patch(color=COLOURS[c], label=labels[c]) for c in labels],
               loc="upper right", ncol=3, fontsize=8, frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    plots["adherence"] = _png(fig, out / "adherence.png")

    plots["mood"] = _trend(data, per_session(data, *mood), "mood (1-5)",
                           f"Mood check-in ({mood[0]}.{mood[1]})", out / "mood.png")  # fmt: skip
    empathy = per_session(data, empathy_inst, None)
    plots["empathy"] = _trend(data, empathy, "mean empathy (1-5)",
                              "Post-story empathy", out / "empathy.png")  # fmt: skip
    plots["understood"] = _trend(data, per_session(data, *understood), "felt understood (1-5)",
                                 "Felt understood", out / "understood.png")  # fmt: skip

    fig, ax = plt.subplots(figsize=(5, 3.6))
    stats = condition_stats(data, empathy)
    for x, (cond, ci) in enumerate(stats.items()):
        if ci is None:
            continue
        ax.bar(x, ci.mean, color="#5c6bc0" if cond == "matched" else "#90a4ae")
        ax.errorbar(x, ci.mean, yerr=[[ci.mean - ci.low], [ci.high - ci.mean]], color="black",
                    capsize=6)  # fmt: skip
        ax.text(x, 0.15, f"n = {ci.n}", ha="center", color="white")
    ax.set_xticks(range(len(stats)), list(stats))
    ax.set(ylabel="mean empathy (1-5)", ylim=(0, 5.5), title="Story condition (mean, 95% CI)")
    fig.tight_layout()
    plots["condition"] = _png(fig, out / "condition.png")

    fig, ax = plt.subplots(figsize=(8, 3.6))
    durations = {
        pid: [s.minutes for s in data.sessions
              if s.participant == pid and s.minutes is not None and s.status == "completed"]
        for pid in data.participants
    }  # fmt: skip
    shown = {p: d for p, d in durations.items() if d}
    if shown:
        ax.boxplot(list(shown.values()), tick_labels=list(shown))
    ax.set(ylabel="minutes", title="Durations of completed sessions")
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    fig.tight_layout()
    plots["durations"] = _png(fig, out / "durations.png")
    return plots


def condition_stats(data: StudyData, empathy: dict[int, float]) -> dict[str, MeanCI | None]:
    """Session-level mean empathy by the condition of the story read."""
    values: dict[str, list[float]] = {"matched": [], "random": []}
    for s in data.sessions:
        if s.condition in values and s.id in empathy:
            values[s.condition].append(empathy[s.id])
    return {cond: mean_ci(v) for cond, v in values.items()}


def summary_rows(data: StudyData) -> list[list[str]]:
    grid = adherence(data)
    rows = []
    for pid in data.participants:
        days = grid[pid]
        held = days.count(HELD)
        rows.append([pid, str(len(days)), str(held), str(days.count(INTERRUPTED)),
                     str(days.count(MISSED)), f"{100 * held / len(days):.0f} %"])  # fmt: skip
    return rows


def render_html(data: StudyData, plots: dict[str, Path], source: Path) -> str:
    def img(key: str, alt: str) -> str:
        encoded = base64.b64encode(plots[key].read_bytes()).decode()
        return f'<figure><img alt="{alt}" src="data:image/png;base64,{encoded}"></figure>'

    head = ["participant", "study days", "held", "interrupted", "missed", "adherence"]
    table = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in summary_rows(data)
    )
    empathy = per_session(data, "story_empathy", None)
    cond = "".join(
        f"<li>{c}: mean {ci.mean:.2f} (95 % CI {ci.low:.2f}–{ci.high:.2f}), n = {ci.n}</li>"
        for c, ci in condition_stats(data, empathy).items()
        if ci is not None
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Companion study report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:1em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:.2em .6em;text-align:right}}
img{{max-width:100%}}figure{{margin:1em 0}}</style></head><body>
<h1>Companion study report</h1>
<p>Source: {html.escape(str(source))}; {len(data.participants)} participants,
{len(data.sessions)} sessions. Missed = a study day without a held session.</p>
<h2>Adherence</h2>
<table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{table}</table>
{img("adherence", "adherence calendar")}
<h2>Mood and empathy over the study</h2>
{img("mood", "mood check-in over study days")}
{img("empathy", "post-story empathy over study days")}
<h2>Matched vs random stories</h2><ul>{cond}</ul>
{img("condition", "empathy by story condition")}
<h2>Session durations</h2>
{img("durations", "session durations")}
<h2>Felt understood</h2>
{img("understood", "felt understood over study days")}
</body></html>
"""


def write_report(db_path: Path, out: Path, config: ReportConfig | None = None) -> Path:
    data = load(db_path)
    if not data.sessions:
        raise ReportError(f"{db_path}: no sessions yet; nothing to report")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    plots = plot_all(data, out, config or ReportConfig())
    page = out / "report.html"
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(render_html(data, plots, db_path))
    log.info("report for %s participants written to %s", len(data.participants), page)
    return page

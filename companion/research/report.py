"""A self-contained HTML study report with plots, for one device or a merged study.

Reads the database read-only and writes only into --out (every file 0600). The
page embeds its PNGs (also written beside it) and references nothing over the
network, so it can be mailed or archived as is. Which instrument items the mood,
empathy and felt-understood plots show comes from the protocols recorded in the
data (rules in `companion.research.instruments`). Statistics are plain
functions, separate from the drawing.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
import math
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, fields
from datetime import date, datetime
from pathlib import Path

from companion.errors import CompanionError
from companion.files import private_dir, write_private
from companion.research.instruments import Panel, Recorded, Roles, choose_roles
from companion.store import adherence as counting
from companion.store.readonly import ReadOnly

log = logging.getLogger(__name__)

# Two-sided 95 % t critical values for df 1..30; beyond, 1.96 + 2.4/df is within 0.005.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
COLOURS = dict(zip(counting.DAY_STATES, ("#2e7d32", "#f9a825", "#c62828", "#cfd8dc"), strict=True))


class ReportError(CompanionError):
    """The database cannot be reported on."""


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
    protocol: tuple[str, int] | None = None  # (id, version)


@dataclass(frozen=True)
class StudyData:
    sessions: tuple[SessionRow, ...]
    answers: dict[tuple[int, str, str], int]  # (session, instrument, item) -> value
    protocols: tuple[Recorded, ...] = ()  # the `protocols` table, if the data has one

    def roles(self) -> Roles:
        """Which items the mood, empathy and felt-understood plots show."""
        answered = {(inst, item) for _, inst, item in self.answers}
        used = {s.protocol for s in self.sessions if s.protocol}
        return choose_roles(list(self.protocols), answered, used)

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
    reader = ReadOnly(path)
    conn = reader.conn
    try:
        # One read transaction: the sessions and answers are one consistent snapshot.
        conn.execute("BEGIN")
        rows = conn.execute(
            "SELECT s.id, s.participant_id, s.status, s.local_date, s.started_at, s.ended_at, "
            "(SELECT e.condition FROM story_exposures e WHERE e.session_id = s.id LIMIT 1), "
            "s.protocol_id, s.protocol_version FROM sessions s ORDER BY s.id"
        ).fetchall()
        answers = conn.execute(
            "SELECT session_id, instrument, item, value FROM self_reports "
            "WHERE value IS NOT NULL AND status = 'answered'"
        ).fetchall()
        recorded = []
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'protocols'").fetchone():
            recorded = conn.execute("SELECT id, version, definition FROM protocols").fetchall()
        reader.check()
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"{path}: not a companion or study database ({exc})") from exc
    finally:
        reader.close()
    sessions = []
    for sid, pid, status, local, started, ended, condition, proto, version in rows:
        minutes = None
        if started and ended:
            delta = datetime.fromisoformat(ended) - datetime.fromisoformat(started)
            minutes = delta.total_seconds() / 60
        sessions.append(SessionRow(sid, pid, status, date.fromisoformat(local), minutes, condition,
                                   (proto, version)))  # fmt: skip
    try:
        protocols = tuple(Recorded(i, v, json.loads(d)) for i, v, d in recorded)
    except ValueError as exc:
        raise ReportError(f"{path}: a recorded protocol is not valid JSON ({exc})") from exc
    return StudyData(tuple(sessions), {(s, i, it): v for s, i, it, v in answers}, protocols)


def _status_rows(data: StudyData, pid: str) -> list[tuple[str, date]]:
    return [(s.status, s.local_date) for s in data.sessions if s.participant == pid]


def adherence(data: StudyData) -> dict[str, list[str]]:
    """Per participant, each study day's state, by the rules `companion status` uses too
    (`companion.store.adherence`): held, interrupted, missed or no record."""
    return {
        pid: [state for _, state in counting.day_states(_status_rows(data, pid))]
        for pid in data.participants
    }


def adherence_counts(data: StudyData) -> dict[str, counting.Adherence]:
    """Per participant, the session and day counts `companion status` shows."""
    return {pid: counting.adherence(_status_rows(data, pid)) for pid in data.participants}


def empathy_values(data: StudyData, roles: Roles) -> dict[int, float]:
    """Session id -> mean of the session's post-story likert answers."""
    overall = roles.empathy_overall
    return overall.values(data.answers) if overall else {}


def _png(fig, path: Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    write_private(path, buffer.getvalue())
    return path


MAX_PANELS = 6  # per figure; more items than this are listed on the page, not drawn


def _trends(data: StudyData, panels: tuple[Panel, ...], what: str, path: Path) -> Path:
    """One panel per item (or instrument mean): each participant's line and the daily mean."""
    import matplotlib.pyplot as plt

    shown = panels[:MAX_PANELS]
    fig, axes = plt.subplots(max(1, len(shown)), 1, figsize=(8, 0.4 + 3.2 * max(1, len(shown))),
                             squeeze=False)  # fmt: skip
    if not shown:
        axes[0][0].text(0.5, 0.5, f"No {what} items in the protocol", ha="center", va="center")
        axes[0][0].set_axis_off()
    for ax, panel in zip((row[0] for row in axes), shown, strict=False):
        values = panel.values(data.answers)
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
        low, high = panel.scale
        ax.set(xlabel="study day", ylabel=f"{low}-{high}", title=f"{what}: {panel.label}",
               ylim=(low - 0.2, high + 0.2))  # fmt: skip
        if by_day and len(data.participants) <= 12:
            ax.legend(fontsize=7, ncol=4, loc="lower right")
    fig.tight_layout()
    return _png(fig, path)


def plot_all(data: StudyData, out: Path, roles: Roles) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    plots: dict[str, Path] = {}

    grid = adherence(data)
    width = max(len(g) for g in grid.values())
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.3 * len(grid)))
    states = list(COLOURS)  # colour index per day state; -1 pads shorter rows
    matrix = [[states.index(d) for d in g] + [-1] * (width - len(g)) for g in grid.values()]
    cmap = ListedColormap(["#ffffff", *COLOURS.values()])
    ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=-1.5, vmax=len(states) - 0.5,
              interpolation="nearest")  # fmt: skip
    ax.set_yticks(range(len(grid)), list(grid))
    ax.set_xticks(range(0, width, max(1, width // 15)), [str(d + 1) for d in range(0, width,
                  max(1, width // 15))])  # fmt: skip
    ax.set_xlabel("study day")
    ax.set_title("Adherence", loc="left")
    fig.legend(handles=[Patch(color=c, label=state) for state, c in COLOURS.items()],
               loc="upper right", ncol=4, fontsize=8, frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    plots["adherence"] = _png(fig, out / "adherence.png")

    plots["mood"] = _trends(data, roles.mood, "Mood check-in", out / "mood.png")
    plots["empathy"] = _trends(data, roles.empathy, "Post-story empathy", out / "empathy.png")
    plots["understood"] = _trends(data, roles.understood, "Felt understood",
                                  out / "understood.png")  # fmt: skip
    empathy = empathy_values(data, roles)

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
    top = roles.empathy_overall.scale[1] if roles.empathy_overall else 5
    ax.set(ylabel="mean post-story rating", ylim=(0, top + 0.5),
           title="Story condition (mean, 95% CI)")  # fmt: skip
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


# The adherence table's columns: the names `status --json` uses, with spaces.
SUMMARY = tuple(f.name for f in fields(counting.Adherence))


def summary_rows(data: StudyData) -> list[list[str]]:
    rows = []
    for pid, counts in adherence_counts(data).items():
        values = counts.as_dict()
        rate = counts.day_rate
        rows.append([pid, *(str(values[field]) for field in SUMMARY),
                     "–" if rate is None else f"{100 * rate:.0f} %"])  # fmt: skip
    return rows


def _instruments_html(roles: Roles) -> str:
    """Which items each plot shows, and where they came from."""

    def listed(panels: tuple[Panel, ...]) -> str:
        if not panels:
            return "none"
        names = ", ".join(
            f"<code>{html.escape(i.key)}</code> ({i.low}–{i.high})" for p in panels for i in p.items
        )
        hidden = len(panels) - MAX_PANELS
        return names + (f"; the first {MAX_PANELS} are drawn, {hidden} more are not" if hidden > 0
                        else "")  # fmt: skip

    notes = "".join(f"<p>{html.escape(n)}</p>" for n in roles.notes)
    return (
        f"<p>The plots use {html.escape(roles.source)}.</p>{notes}<ul>"
        f"<li>Mood (check-in likert items): {listed(roles.mood)}</li>"
        f"<li>Post-story empathy (mean of each post-story instrument's likert items): "
        f"{listed(roles.empathy)}</li>"
        f"<li>Felt understood (closing likert items): {listed(roles.understood)}</li></ul>"
    )


def render_html(data: StudyData, plots: dict[str, Path], source: Path, roles: Roles) -> str:
    def img(key: str, alt: str) -> str:
        encoded = base64.b64encode(plots[key].read_bytes()).decode()
        return f'<figure><img alt="{alt}" src="data:image/png;base64,{encoded}"></figure>'

    head = ["participant", *(f.replace("_", " ") for f in SUMMARY), "day adherence"]
    table = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in summary_rows(data)
    )
    cond = "".join(
        f"<li>{c}: mean {ci.mean:.2f} (95 % CI {ci.low:.2f}–{ci.high:.2f}), n = {ci.n}</li>"
        for c, ci in condition_stats(data, empathy_values(data, roles)).items()
        if ci is not None
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Companion study report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:1em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:.2em .6em;text-align:right}}
img{{max-width:100%}}figure{{margin:1em 0}}</style></head><body>
<h1>Companion study report</h1>
<p>Source: {html.escape(str(source))}; {len(data.participants)} participants,
{len(data.sessions)} sessions.</p>
<h2>Instruments</h2>
{_instruments_html(roles)}
<h2>Adherence</h2>
<p>{html.escape(counting.RULES)}</p>
<table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{table}</table>
{img("adherence", "adherence calendar")}
<h2>Mood and empathy over the study</h2>
{img("mood", "mood check-in over study days")}
{img("empathy", "post-story empathy over study days")}
<h2>Matched vs random stories</h2>
<p>Each session's mean of all post-story likert answers, by how its story was chosen.</p>
<ul>{cond}</ul>
{img("condition", "empathy by story condition")}
<h2>Session durations</h2>
{img("durations", "session durations")}
<h2>Felt understood</h2>
{img("understood", "felt understood over study days")}
</body></html>
"""


# A clone is set up by deploy/setup.sh into .venv; the plots need the `research` extra.
INSTALL_RESEARCH = ".venv/bin/python -m pip install -e '.[research]'"


def require_matplotlib() -> None:
    """Refuse with one line, before reading or writing anything, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        why = (str(exc).splitlines() or ["not importable"])[0]  # numpy's errors run to pages
        raise ReportError(
            f"the report needs matplotlib, the research extra ({why}); "
            f"install it from the clone with: {INSTALL_RESEARCH}"
        ) from exc


def write_report(db_path: Path, out: Path) -> Path:
    """Write report.html and its PNGs into `out`; the database is only read."""
    require_matplotlib()
    data = load(db_path)
    if not data.sessions:
        raise ReportError(f"{db_path}: no sessions yet; nothing to report")
    private_dir(out)
    roles = data.roles()
    plots = plot_all(data, out, roles)
    page = out / "report.html"
    write_private(page, render_html(data, plots, db_path, roles))
    log.info("report for %s participants written to %s", len(data.participants), page)
    return page

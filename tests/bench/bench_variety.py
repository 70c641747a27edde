"""Benchmark: how repetitive the companion sounds to one simulated participant over a month.

Real daily sessions (session engine, text channel, on-device model, SQLite); the participant
tells our own short stories, skipping the story now and then. Prints, per prompt kind, how many
times a wording was used, how many uses repeated a wording said within the protocol's window
(`avoid_repeat_days`) or earlier that month, and how many distinct wordings were used.

    .venv/bin/python tests/bench/bench_variety.py [--days 30] [--seeds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.bench.machine import cpu_line
from tests.helpers.month import repetitions, run_month


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=3, help="simulated participants")
    args = parser.parse_args()
    print(cpu_line())
    total: dict[str, Counter[str]] = {}
    recalls = sessions = 0
    t0 = time.perf_counter()
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory(prefix="bench-variety-") as tmp:
            opened = run_month(Path(tmp) / "home", days=args.days, seed=seed)
            window = opened.protocol.avoid_repeat_days
            for kind, stats in repetitions(opened, window).items():
                total.setdefault(kind, Counter()).update(stats)
            for kind, stats in repetitions(opened, args.days + 1).items():
                total[kind]["month_repeats"] += stats["repeats"]
            query = "SELECT COUNT(*) FROM turns WHERE purpose = 'story_recall'"
            recalls += opened.db.execute(query).fetchone()[0]
            sessions += opened.db["sessions"].count
            opened.db.close()
    seconds = time.perf_counter() - t0
    per_session = seconds / sessions * 1000
    print(f"{args.seeds} participants x {args.days} days, window {window} days, "
          f"{per_session:.0f} ms per session (whole session, model included)")  # fmt: skip
    print(f"{'kind':18} {'uses':>5} {'wordings':>8} {'distinct':>8} "
          f"{'repeat<window':>13} {'repeat in month':>15}")  # fmt: skip
    for kind, c in total.items():
        uses = c["uses"] or 1
        print(f"{kind:18} {c['uses']:5d} {c['wordings'] // args.seeds:8d} "
              f"{c['distinct'] / args.seeds:8.1f} {c['repeats'] / uses:13.1%} "
              f"{c['month_repeats'] / uses:15.1%}")  # fmt: skip
    print(
        f"recalls of an earlier story: {recalls} in {sessions} sessions ({recalls / sessions:.0%})"
    )


if __name__ == "__main__":
    main()

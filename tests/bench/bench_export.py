"""Benchmark: export, merge and report for a 30-day, 10-participant synthetic study.

Each participant has their own device (home), filled by the real session engine through
the text channel (about 10 % of days skipped, 10 % of sessions cut short).

    .venv/bin/python tests/bench/bench_export.py [--days 30] [--participants 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from companion.research.export import ExportOptions, export_home
from companion.research.merge import merge_exports
from companion.research.report import write_report
from tests.helpers.study import fill_study, make_home


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--participants", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="Work here and keep the results.")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-export-"))
    root.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    homes = []
    for n in range(args.participants):
        opened = make_home(root / f"home-{n:02d}", f"P{n + 1:03d}", f"Person{n}")
        fill_study(opened, args.days, seed=n)
        homes.append(opened)
    fill_s = time.perf_counter() - t0
    sessions = sum(h.db["sessions"].count for h in homes)
    turns = sum(h.db["turns"].count for h in homes)
    db_bytes = sum(h.home.db_path.stat().st_size for h in homes)
    print(
        f"study: {args.participants} devices x {args.days} days: {sessions} sessions, "
        f"{turns} turns, databases {db_bytes / 1e6:.2f} MB, generated in {fill_s:.1f} s"
    )

    variants = {
        "csv": ExportOptions(),
        "jsonl": ExportOptions(format="jsonl"),
        "csv+deidentify+transcripts": ExportOptions(deidentify=True, include_transcripts=True),
    }
    exports: dict[str, list[Path]] = {}
    for label, options in variants.items():
        t = time.perf_counter()
        exports[label] = []
        for n, h in enumerate(homes):
            out = root / f"export-{label}-{n:02d}"
            export_home(h.home, out, options)
            exports[label].append(out)
        took = time.perf_counter() - t
        total = sum(size(e) for e in exports[label])
        print(
            f"export {label:28s}: {took:6.2f} s total, {1000 * took / len(homes):6.0f} ms "
            f"per device, {total / 1e6:6.2f} MB ({total / len(homes) / 1e3:.0f} kB per device)"
        )

    study = root / "study.db"
    study.unlink(missing_ok=True)
    t = time.perf_counter()
    merge_exports(study, exports["csv+deidentify+transcripts"])
    print(
        f"merge {len(homes)} exports: {time.perf_counter() - t:.2f} s, "
        f"study.db {study.stat().st_size / 1e6:.2f} MB"
    )
    t = time.perf_counter()
    merge_exports(study, exports["csv+deidentify+transcripts"])
    print(f"merge again (idempotent, nothing added): {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    page = write_report(study, root / "report")
    print(f"report: {time.perf_counter() - t:.2f} s, {page} ({page.stat().st_size / 1e3:.0f} kB)")
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()

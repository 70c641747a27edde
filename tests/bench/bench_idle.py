"""Idle cost of `companion run`: CPU share of one core and RSS while waiting between sessions.

    .venv/bin/python tests/bench/bench_idle.py [--seconds 60]

Starts the real service in a fresh home (window later today, so it only waits),
lets it settle, then samples /proc/<pid>/stat and /proc/<pid>/status. Goal: <= 0.5 %.
The heartbeat runs every 30 s, as under systemd with WatchdogSec=60.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="companion-idle-"))
    start = (datetime.now(UTC) + timedelta(hours=3)).strftime("%H:00")
    end_hour = (datetime.now(UTC) + timedelta(hours=4)).hour
    protocol = home / "protocol.toml"
    from companion.engine.protocol import default_protocol_text

    window = f'["{start}-{end_hour:02d}:00"]' if end_hour > int(start[:2]) else '["23:00-23:59"]'
    protocol.write_text(default_protocol_text() + f"\n[schedule]\nwindows = {window}\n")
    (home / "config.toml").write_text(f'timezone = "UTC"\nprotocol = "{protocol}"\n')
    env = {**os.environ, "COMPANION_HOME": str(home), "WATCHDOG_USEC": "60000000"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "run"], stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        time.sleep(5)  # imports and start-up checks are not idle time
        assert proc.poll() is None, "companion run exited"
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.seconds)
        cpu1, t1 = cpu_seconds(proc.pid), time.monotonic()
        share = 100 * (cpu1 - cpu0) / (t1 - t0)
        print(f"idle {t1 - t0:.0f} s: CPU {share:.3f} % of one core "
              f"({cpu1 - cpu0:.2f} s), RSS {rss_mb(proc.pid):.1f} MB "
              f"(goal <= 0.5 %: {'ok' if share <= 0.5 else 'FAIL'})")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()

"""Cold start of a session: from `companion session` being started to its first words.

    .venv/bin/python tests/bench/bench_cold.py [--compare OLD.onnx] [--rounds 3]

A new home per model (made by `init`, so the bank is encoded before), then per round a fresh
process: Python, the CLI, the home, the model and the first prompt, as a participant waits for
it. --compare times another model build (e.g. `git show REV:models/companion-empathy-1.onnx`
with its .onnx.json and tokenizer beside it) in the same run, interleaved. Prints the CPU.
Goal: <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.machine import cpu_line

REPO = Path(__file__).resolve().parents[2]


def companion(*args: str, home: Path, **kw) -> subprocess.Popen:
    env = {**os.environ, "COMPANION_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "companion", *args], env=env, cwd=REPO,
                            text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, **kw)  # fmt: skip


def make_home(root: Path, model: Path | None) -> Path:
    home = root / (model.stem if model else "shipped")
    home.mkdir(mode=0o700)
    lines = ['participant_id = "P1"', 'timezone = "Europe/London"']
    if model:
        lines.append(f'model = "{model}"')
    (home / "config.toml").write_text("\n".join(lines) + "\n")
    (home / "config.toml").chmod(0o600)
    proc = companion("init", home=home)
    proc.communicate(timeout=600)
    return home


def first_words_s(home: Path) -> float:
    began = time.perf_counter()
    proc = companion("session", "--kind", "daily", home=home)
    assert proc.stdout is not None
    proc.stdout.readline()
    took = time.perf_counter() - began
    proc.kill()
    proc.wait()
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--compare", type=Path, action="append", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(cpu_line())
    with tempfile.TemporaryDirectory() as tmp:
        homes = {"shipped": make_home(Path(tmp), None)}
        homes |= {m.name: make_home(Path(tmp), m.resolve()) for m in args.compare}
        times: dict[str, list[float]] = {name: [] for name in homes}
        for _ in range(args.rounds):
            for name, home in homes.items():
                times[name].append(first_words_s(home))
    for name, t in times.items():
        print(json.dumps({"model": name, "median_s": round(statistics.median(t), 3),
                          "min_s": round(min(t), 3), "max_s": round(max(t), 3),
                          "load_avg_1min": round(os.getloadavg()[0], 2)}))  # fmt: skip


if __name__ == "__main__":
    main()

"""Run many real `companion` command lines, each in its own process, for the cost of one
interpreter start-up: this process imports the CLI once, then forks a child per command
line. Each child is a fresh process running `companion.cli.main()` exactly as
`python -m companion` does, with its own stdin, stdout, stderr, environment and exit code.

Used by the adversarial corpus (tests/system/test_adversarial*.py), where hundreds of command lines
would otherwise spend most of their time starting Python. Protocol: one JSON list of cases
on stdin ({argv, stdin (latin-1 text of the bytes), env, cwd}); one JSON list of results
({rc, stdout, stderr}) on stdout.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
TIMEOUT_S = 120.0


def _child(case: dict[str, Any], out: str, err: str, inp: str) -> None:
    """In the forked child: become `companion ARGV` and exit with its code."""
    code = 1
    try:
        fd_in = os.open(inp, os.O_RDONLY)
        fd_out = os.open(out, os.O_WRONLY)
        fd_err = os.open(err, os.O_WRONLY)
        os.dup2(fd_in, 0), os.dup2(fd_out, 1), os.dup2(fd_err, 2)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                     encoding="utf-8")  # fmt: skip
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)  # fmt: skip
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)  # fmt: skip
        os.environ.clear()
        os.environ.update(case["env"])
        os.chdir(case.get("cwd") or REPO)
        sys.argv = ["companion", *case["argv"]]
        from companion.cli import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what Python itself would print for an uncaught exception
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import companion.app  # noqa: F401  (imported once, before the forks)
    import companion.cli  # noqa: F401

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, case in enumerate(cases):
            out, err, inp = (os.path.join(tmp, f"{n}.{x}") for x in ("out", "err", "in"))
            Path(inp).write_bytes(case.get("stdin", "").encode("latin-1"))
            Path(out).touch()
            Path(err).touch()
            began = time.monotonic()
            pid = os.fork()
            if pid == 0:
                _child(case, out, err, inp)
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    status = -1
                    break
                time.sleep(0.005)
            rc = os.waitstatus_to_exitcode(status) if status != -1 else -9
            results.append({
                "rc": rc,
                "stdout": Path(out).read_text("utf-8", errors="replace"),
                "stderr": Path(err).read_text("utf-8", errors="replace"),
                "seconds": round(time.monotonic() - began, 3),
            })  # fmt: skip
    return results


def run_many(cases: list[dict[str, Any]], timeout: float = 900) -> list[dict[str, Any]]:
    """From a test: run `cases` in one forking runner subprocess; one result per case."""
    base = {k: v for k, v in os.environ.items() if k != "COMPANION_HOME"}
    payload = [
        {"argv": list(c["argv"]), "stdin": c.get("stdin", b"").decode("latin-1"),
         "env": {**base, **c.get("env", {})}, "cwd": str(c.get("cwd") or REPO)}
        for c in cases
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "tests.helpers.forkrun"], input=json.dumps(payload),
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


if __name__ == "__main__":
    cases = json.loads(sys.stdin.read())
    results = run_cases(cases)
    sys.stdout.write(json.dumps(results))

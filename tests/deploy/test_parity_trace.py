"""deploy/arm64/parity.py `trace` and `trace-compare`, with the real shipped model on this
machine: a trace repeats bit for bit (so any difference between two machines' traces is theirs),
and the comparison names exactly the tensors that differ, in graph order, with their size.
(The graph with every tensor exposed needs `onnx`, a build tool; the shipped graph's own outputs
are traced here.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from companion.model.encode import default_model_dir
from deploy.arm64.parity import compare_traces

REPO = Path(__file__).resolve().parents[2]
PARITY = REPO / "deploy" / "arm64" / "parity.py"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, PARITY, *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=REPO)  # fmt: skip


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("trace")
    csv = tmp / "rows.csv"
    csv.write_text("label,content\n6,My sister called to say the test came back clear.\n"
                   "8,Nobody came to my birthday dinner this year.\n"
                   "1,I found a letter from my grandfather in an old coat.\n")  # fmt: skip
    model = max(default_model_dir().glob("companion-empathy-*.onnx"))
    outs = []
    for name in ("a.npz", "b.npz"):
        done = run("trace", "--model", model, "--csv", csv, "--rows", "0,2", "--out", tmp / name)
        assert done.returncode == 0, done.stderr
        assert "traced 2 tensors of 2 rows" in done.stdout
        outs.append(tmp / name)
    return outs[0], outs[1]


def test_a_trace_repeats_bit_for_bit(traces):
    a, b = traces
    with np.load(a) as x, np.load(b) as y:
        assert list(x["names"]) == ["embedding", "emotion_logits"]
        assert list(x["rows"]) == [0, 2]
        assert compare_traces(x, y) == []
    done = run("trace-compare", a, b)
    assert done.returncode == 0 and done.stdout == ""


def test_trace_compare_names_each_differing_tensor_with_its_size(traces, tmp_path):
    a, b = traces
    with np.load(b) as y:
        changed = {k: y[k] for k in y.files}
    emb = changed["2|embedding"].copy()
    emb.flat[5] += np.float32(0.25) * np.abs(emb).max()
    changed["2|embedding"] = emb
    np.savez(tmp_path / "c.npz", **changed)
    with np.load(a) as x, np.load(tmp_path / "c.npz") as y:
        found = compare_traces(x, y)
    assert len(found) == 1 and found[0]["row"] == 2 and found[0]["tensor"] == "embedding"
    assert found[0]["rel"] == pytest.approx(0.25, rel=1e-3)
    done = run("trace-compare", a, tmp_path / "c.npz")
    assert done.stdout.strip() == "row 2: embedding: 0.25 relative"

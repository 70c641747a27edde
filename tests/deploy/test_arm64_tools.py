"""The arm64 smoke's and rehearsal's helpers that run without emulation: the Pi /proc/cpuinfo
(deploy/arm64/cpuinfo.sh), the candidate-model swap (deploy/arm64/swap_model.py, with the real
shipped model files), and the option checks that must refuse before anything is mounted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from companion.model.encode import model_build, resolve_model
from tests.helpers.run import REPO

ARM64 = REPO / "deploy" / "arm64"


def run(*args: str | Path, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    ("core", "part", "dotprod"),
    [("cortex-a53", "0xd03", False), ("cortex-a72", "0xd08", False), ("cortex-a76", "0xd0b", True)],
)
def test_cpuinfo_shows_the_pi_core(core, part, dotprod):
    done = run("bash", ARM64 / "cpuinfo.sh", core)
    assert done.returncode == 0, done.stderr
    entries = [e for e in done.stdout.split("\n\n") if e.strip()]
    assert len(entries) == int(run("nproc").stdout)
    for entry in entries:
        fields = dict(line.split(":", 1) for line in entry.splitlines())
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        assert fields["CPU implementer"] == "0x41"  # Arm
        assert fields["CPU part"] == part
        features = fields["Features"].split()
        assert {"fp", "asimd"} <= set(features)
        assert ("asimddp" in features) is dotprod  # only the Pi 5's A76 has dot product


def test_cpuinfo_refuses_an_unknown_core():
    done = run("bash", ARM64 / "cpuinfo.sh", "cortex-a78")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "cortex-a53, cortex-a72 or cortex-a76" in done.stderr


def _tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "models").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", src / "pyproject.toml")
    for f in ("NOTICE", "LICENSE-all-MiniLM-L6-v2"):
        shutil.copy(REPO / "models" / f, src / "models" / f)
    return src


def _candidate(tmp_path: Path, version: int = 3) -> Path:
    """The shipped model under a new name and version, as issue 13's candidate would come."""
    cand = tmp_path / "candidate"
    cand.mkdir()
    shipped = resolve_model()
    meta = json.loads(Path(f"{shipped}.json").read_text())
    onnx = cand / f"companion-empathy-{version}.onnx"
    shutil.copy(shipped, onnx)
    tok = f"companion-empathy-{version}.tokenizer.json"
    shutil.copy(REPO / "models" / meta["tokenizer"]["file"], cand / tok)
    meta["tokenizer"]["file"] = tok
    meta["version"] = version
    (cand / f"companion-empathy-{version}.onnx.json").write_text(json.dumps(meta))
    return cand


def test_swap_model_ships_the_candidate_and_keeps_the_rest(tmp_path):
    src, cand = _tree(tmp_path), _candidate(tmp_path)
    onnx = cand / "companion-empathy-3.onnx"
    done = run(sys.executable, ARM64 / "swap_model.py", onnx, src)
    assert done.returncode == 0, done.stderr
    include = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
        "targets"
    ]["wheel"]["force-include"]
    models = {k: v for k, v in include.items() if "companion-empathy" in k}
    assert models == {
        f"models/{n}": f"companion/_models/{n}"
        for n in ("companion-empathy-3.onnx", "companion-empathy-3.onnx.json",
                  "companion-empathy-3.tokenizer.json")
    }  # fmt: skip
    assert "models/NOTICE" in include and "models/LICENSE-all-MiniLM-L6-v2" in include
    # The copied model verifies against its own sidecar, under the candidate's build id.
    assert model_build(src / "models" / "companion-empathy-3.onnx").startswith(
        "companion-empathy-3+"
    )


def test_swap_model_names_a_missing_tokenizer(tmp_path):
    src, cand = _tree(tmp_path), _candidate(tmp_path)
    (cand / "companion-empathy-3.tokenizer.json").unlink()
    before = (src / "pyproject.toml").read_text()
    done = run(sys.executable, ARM64 / "swap_model.py", cand / "companion-empathy-3.onnx", src)
    assert done.returncode == 1
    assert "companion-empathy-3.tokenizer.json not found" in done.stderr
    assert (src / "pyproject.toml").read_text() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cpu", "max"], "--cpu max: use cortex-a53, cortex-a72 or cortex-a76"),
        (["--model-dir", "EMPTY"], "no companion-empathy-*.onnx with its .onnx.json"),
        (["--bogus"], "unknown option --bogus"),
    ],
)
def test_smoke_refuses_bad_options_before_doing_anything(tmp_path, args, message):
    csv = tmp_path / "dev.csv"
    csv.write_text("label,content\n1,a text\n")
    (tmp_path / "EMPTY").mkdir()
    args = [str(tmp_path / "EMPTY") if a == "EMPTY" else a for a in args]
    done = run("bash", ARM64 / "smoke.sh", "--dev-csv", csv, *args, timeout=30)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "arm64 smoke [" not in done.stdout  # no step started


def test_rehearsal_refuses_an_unknown_arch():
    done = run("bash", REPO / "deploy" / "rehearse.sh", "--arch", "armhf", timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip() == "rehearse: --arch armhf: use amd64 or arm64"

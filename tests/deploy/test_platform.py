"""Supported platforms: deploy/check-platform.sh (run first by provision.sh) and the arm64
parity verdict (deploy/arm64/parity.py compare), with faked platform facts and parity files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.run import REPO

CHECK = REPO / "deploy" / "check-platform.sh"
PARITY = REPO / "deploy" / "arm64" / "parity.py"

PI_OS_64 = {"MACHINE": "aarch64", "DPKG_ARCH": "arm64", "PYTHON": "3.11"}


def check(tmp_path: Path, model: str | None = "Raspberry Pi 4 Model B Rev 1.5",
          codename: str = "bookworm", script: Path = CHECK, args: tuple[str, ...] = (),
          **facts: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    os_release = tmp_path / "os-release"
    os_release.write_text(f'ID=debian\nVERSION_CODENAME="{codename}"\n')
    model_file = tmp_path / "model"
    if model is not None:
        model_file.write_bytes(model.encode() + b"\0")  # device-tree strings end in NUL
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPANION_PLATFORM_")}
    env |= {f"COMPANION_PLATFORM_{k}": v for k, v in {**PI_OS_64, **facts}.items()}
    env |= {"COMPANION_PLATFORM_OS_RELEASE": str(os_release),
            "COMPANION_PLATFORM_MODEL": str(model_file)}  # fmt: skip
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip


PI_64 = ["Raspberry Pi 3 Model B Plus Rev 1.3", "Raspberry Pi 4 Model B Rev 1.5",
         "Raspberry Pi 5 Model B Rev 1.0", "Raspberry Pi Zero 2 W Rev 1.0"]  # fmt: skip


@pytest.mark.parametrize("model", [*PI_64, None])
def test_64_bit_pi_os_bookworm_is_supported(tmp_path, model):
    done = check(tmp_path, model=model)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("Python 3.11: supported")
    assert done.stderr.count("\n") == 1


def test_amd64_debian_is_supported_for_development_and_rehearsal(tmp_path):
    done = check(tmp_path, model=None, MACHINE="x86_64", DPKG_ARCH="amd64")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("facts", "model", "says"),
    [
        (
            {"MACHINE": "armv7l", "DPKG_ARCH": "armhf"},
            "Raspberry Pi 4 Model B Rev 1.5",
            "32-bit ARM (armv7l)",
        ),
        (
            {"MACHINE": "armv6l", "DPKG_ARCH": "armhf"},
            "Raspberry Pi Zero W Rev 1.1",
            "32-bit ARM (armv6l)",
        ),
        # 32-bit Raspberry Pi OS on a Pi 4 boots a 64-bit kernel: uname says aarch64.
        ({"DPKG_ARCH": "armhf"}, "Raspberry Pi 4 Model B Rev 1.5", "32-bit userland (armhf"),
        ({"PYTHON": "3.9"}, "Raspberry Pi 4 Model B Rev 1.5", "Python 3.9;"),
        ({"PYTHON": "3.13"}, "Raspberry Pi 5 Model B Rev 1.0", "Python 3.13;"),
        ({"MACHINE": "riscv64", "DPKG_ARCH": "riscv64"}, None, "CPU architecture riscv64"),
        ({}, "Raspberry Pi 2 Model B Rev 1.1", "has no 64-bit CPU"),
    ],
)
def test_refuses_with_one_line_and_exit_2(tmp_path, facts, model, says):
    done = check(tmp_path, model=model, **facts)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("companion: unsupported platform: ")
    assert says in lines[0]


def test_without_python3_only_bookworm_is_accepted(tmp_path):
    assert check(tmp_path, PYTHON="").returncode == 0  # provision installs Bookworm's 3.11
    done = check(tmp_path, PYTHON="", codename="bullseye")
    assert done.returncode == 2 and "not Debian Bookworm" in done.stderr


def test_provision_refuses_a_32_bit_os_before_touching_anything(tmp_path):
    args = ("--participant", "P001", "--timezone", "UTC")
    done = check(tmp_path, script=REPO / "deploy" / "provision.sh", args=args, DPKG_ARCH="armhf")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "companion: unsupported platform: 32-bit userland (armhf packages on a aarch64 kernel); "
        "reinstall with 64-bit Raspberry Pi OS (Bookworm, arm64)"
    ]
    assert "== system packages" not in done.stdout


# Stands in for the host Python in deploy/arm64/wheels.sh: pip's calls are logged, `pip wheel`
# leaves a pure wheel, `pip download` finds nothing (so the script stops before building);
# everything else runs in the real interpreter.
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = -m ] && [ "$2" = pip ]; then
  printf '%s\\n' "${*:3}" >> "$PIP_LOG"
  if [ "$3" = wheel ]; then
    while [ "$1" != -w ]; do shift; done
    touch "$2/srt-1.0-py3-none-any.whl"; exit 0
  fi
  echo "ERROR: No matching distribution found for numpy"; exit 1
fi
exec "$REAL_PYTHON" "$@"
"""


def test_supported_python_is_what_the_wheel_check_uses(tmp_path):
    done = subprocess.run(["bash", str(CHECK), "--python"], capture_output=True, text=True)
    supported = done.stdout.strip()
    assert supported == "3.11"
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / "pip.log"
    env = {**os.environ, "PIP_LOG": str(log), "REAL_PYTHON": sys.executable}
    wheels = subprocess.run(
        ["bash", str(REPO / "deploy" / "arm64" / "wheels.sh"), str(tmp_path / "out"),
         "--python", str(fake)], capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert wheels.returncode == 1, wheels.stderr
    assert f"no aarch64 wheel for Python {supported}: " in wheels.stderr
    (download,) = [line.split() for line in log.read_text().splitlines() if "download" in line]
    assert download[download.index("--python-version") + 1] == supported
    assert download[download.index("--abi") + 1] == "cp" + supported.replace(".", "")


def _parity_file(path: Path, emb: np.ndarray, emo: np.ndarray, choices: list[str],
                 machine: str) -> Path:  # fmt: skip
    np.savez(path, machine=np.array(machine), embeddings=emb, emotions=emo, bank_fresh=emb[:4],
             choice_shipped=np.array(choices), choice_fixed_shipped=np.array(choices),
             choice_fixed_fresh=np.array(choices))  # fmt: skip
    return path


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PARITY), "compare", str(a), str(b)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_parity_verdict_follows_the_thresholds(tmp_path):
    rng = np.random.default_rng(7)
    emb = rng.normal(size=(300, 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    emo = rng.dirichlet(np.ones(32), size=300).astype(np.float32)
    choices = [f"bank-{i % 64}" for i in range(50)]
    x86 = _parity_file(tmp_path / "x86.npz", emb, emo, choices, "x86_64")

    # Small int8-kernel-sized noise: passes.
    near = emb + rng.normal(scale=1e-3, size=emb.shape).astype(np.float32)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    ok = _compare(x86, _parity_file(tmp_path / "a.npz", near, emo, choices, "aarch64"))
    assert ok.returncode == 0, ok.stdout
    assert '"emotion_top1_agreement": 1.0' in ok.stdout

    # Issue 16's goals are reported; the regression guard (below them) decides the exit code.
    def goals(done) -> dict:
        return json.loads(done.stdout.splitlines()[0])["goals_met"]

    assert all(goals(ok).values())
    # 2 of 300 top-1 emotions flipped (99.33 %): goal not met, guard passes; 4 (98.67 %): fails.
    for flips, code in ((4, 1), (2, 0)):
        flipped = emo.copy()
        for i in range(flips):
            flipped[i] = np.roll(flipped[i], 1) if flipped[i].argmax() != 31 else flipped[i][::-1]
        done = _compare(x86, _parity_file(tmp_path / "f.npz", emb, flipped, choices, "aarch64"))
        assert done.returncode == code, done.stdout
        assert not goals(done)["emotion_top1_agreement"]
        assert "goal emotion_top1_agreement >= 0.995: NOT MET" in done.stdout

    # One embedding a little off (cosine ~0.995): goal missed, guard passes; far off: fails.
    for weight, code in ((0.1, 0), (0.4, 1)):
        off = emb.copy()
        off[5] = near[5] + weight * emb[6]
        off[5] /= np.linalg.norm(off[5])
        done = _compare(x86, _parity_file(tmp_path / "c.npz", off, emo, choices, "aarch64"))
        assert done.returncode == code, done.stdout
        assert not goals(done)["embedding_cosine_min"]
        assert code == 0 or "embedding cosine" in done.stdout

    # One story choice of 50 different: goal missed, guard passes; three: fails.
    for changed, code in ((1, 0), (3, 1)):
        other = ["bank-63"] * changed + choices[changed:]
        done = _compare(x86, _parity_file(tmp_path / "s.npz", emb, emo, other, "aarch64"))
        assert done.returncode == code, done.stdout
        assert not goals(done)["story_choice_same_as_first"]
        assert code == 0 or "story choice differs" in done.stdout

    # Re-encoding the fixed stories on the device would change a choice: fails too.
    other = ["bank-63", *choices[1:]]
    fixed = {"choice_fixed_shipped": np.array(choices), "choice_fixed_fresh": np.array(other)}
    np.savez(tmp_path / "r.npz", machine=np.array("aarch64"), embeddings=emb, emotions=emo,
             bank_fresh=emb[:4], choice_shipped=np.array(choices), **fixed)  # fmt: skip
    done = _compare(x86, tmp_path / "r.npz")
    assert done.returncode == 1 and "re-encoding the bank changes" in done.stdout


def test_parity_encode_with_the_real_model_and_without_bank_reencoding(tmp_path):
    csv = tmp_path / "dev.csv"
    csv.write_text(
        "label,content\n"
        "1,My sister surprised me with a visit after two years abroad.\n"
        "2,I heard a noise downstairs in the middle of the night.\n"
        "3,Our old dog died last week and the house feels empty.\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's companion

    def encode(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(PARITY), "encode", "--csv", str(csv), "--n", "3",
                               "--out", str(out), *extra], capture_output=True, text=True,
                              env=env, timeout=300)  # fmt: skip

    done = encode(tmp_path / "a.npz")
    assert done.returncode == 0, done.stderr
    assert "encoded 3 texts and 0 stories" in done.stdout
    done = encode(tmp_path / "b.npz", "--bank-step", "32")
    assert done.returncode == 0, done.stderr
    assert "encoded 3 texts and 2 stories" in done.stdout
    # Without re-encoding there is nothing to say about it, and nothing fails for it.
    same = _compare(tmp_path / "a.npz", tmp_path / "a.npz")
    assert same.returncode == 0, same.stdout
    result = json.loads(same.stdout.splitlines()[0])
    assert result["story_choice_shipped_vs_reencoded"] is None
    assert result["bank_cosine_min"] is None
    assert result["emotion_top1_agreement"] == 1.0 and result["choices"] == 3
    # The same machine, the same model: re-encoding 2 stories agrees with the shipped ones.
    again = _compare(tmp_path / "b.npz", tmp_path / "b.npz")
    assert json.loads(again.stdout.splitlines()[0])["story_choice_shipped_vs_reencoded"] == 1.0

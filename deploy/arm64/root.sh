#!/usr/bin/env bash
# Build (or reuse) an arm64 Debian Bookworm root — the base of 64-bit Raspberry Pi OS — for
# running the companion under qemu-user emulation. Prints the root's path on stdout.
#
#   bash deploy/arm64/root.sh [--cache /var/cache/companion-arm64]
#
# The root is cached outside the repo under CACHE/<key>, the key a hash of the suite and the
# package list, so a changed list builds a new root and an unchanged one is reused (warm CI).
# Needs root, debootstrap and qemu-user-static (deploy/arm64/binfmt.sh); installs them when missing.
set -euo pipefail

cache=/var/cache/companion-arm64
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    *) echo "root.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

suite=bookworm
mirror="${COMPANION_ARM64_MIRROR:-http://deb.debian.org/debian}"
# What a device needs at run time (provision.sh installs the same on a Pi): python3-venv for the
# venv; espeak-ng (pyttsx3) and sox (the voice demo's audio); libportaudio2 (sounddevice);
# alsa-utils; sqlite3; ca-certificates; procps for ps/RSS readings in the budget script.
# libatomic1: vosk's aarch64 library links it (provision.sh installs it on arm64).
packages="python3,python3-venv,espeak-ng,libportaudio2,alsa-utils,sox,sqlite3,ca-certificates,procps,libatomic1"
key="$(printf '%s %s %s' "$suite" "$mirror" "$packages" | sha256sum | cut -c1-12)"
root="$cache/$suite-$key"

log() { echo "arm64-root: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "run as root"; exit 2; }
command -v debootstrap >/dev/null || {
  DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2
}
bash "$(dirname "$0")/binfmt.sh"

if [ -e "$root/.complete" ]; then
  log "reusing $root"
else
  rm -rf "$root.tmp"
  mkdir -p "$cache"
  log "debootstrap $suite arm64 into $root (a few minutes, once per package list)"
  start=$(date +%s)
  debootstrap --arch=arm64 --variant=minbase --include="$packages" "$suite" "$root.tmp" "$mirror" \
    > "$cache/debootstrap-$key.log" 2>&1 || { tail -20 "$cache/debootstrap-$key.log" >&2; exit 1; }
  chroot "$root.tmp" apt-get clean
  rm -rf "$root"
  mv "$root.tmp" "$root"
  touch "$root/.complete"
  log "built in $(( $(date +%s) - start )) s"
fi
echo "$root"

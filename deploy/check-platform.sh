#!/usr/bin/env bash
# Is this machine a supported companion device? Exit 0 (one "platform:" line on stderr) or
# exit 2 with one line saying what is unsupported and what to install instead.
#
#   bash deploy/check-platform.sh            check this machine (provision.sh runs it first)
#   bash deploy/check-platform.sh --python   print the supported Python version and exit
#
# Supported: 64-bit Raspberry Pi OS Bookworm (arm64) on Pi 3, 4, 5 and Zero 2 W, with Bookworm's
# Python 3.11; amd64 Debian Bookworm too (development machines and the rehearsal). The runtime's
# native wheels (onnxruntime above all) exist for aarch64 and x86_64 only, so a 32-bit OS —
# including a 32-bit userland on a 64-bit kernel — cannot run the companion.
# Tests fake the inputs with COMPANION_PLATFORM_{MACHINE,DPKG_ARCH,PYTHON,OS_RELEASE,MODEL}.
set -euo pipefail

supported_python=3.11
if [ "${1:-}" = "--python" ]; then echo "$supported_python"; exit 0; fi

refuse() { echo "companion: unsupported platform: $*" >&2; exit 2; }

machine="${COMPANION_PLATFORM_MACHINE:-$(uname -m)}"
dpkg_arch="${COMPANION_PLATFORM_DPKG_ARCH:-$(dpkg --print-architecture 2>/dev/null || echo unknown)}"
os_release="${COMPANION_PLATFORM_OS_RELEASE:-/etc/os-release}"
model_file="${COMPANION_PLATFORM_MODEL:-/proc/device-tree/model}"
if [ -n "${COMPANION_PLATFORM_PYTHON+set}" ]; then
  python="$COMPANION_PLATFORM_PYTHON"
else
  python="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
fi
codename="$(sed -n 's/^VERSION_CODENAME=//p' "$os_release" 2>/dev/null | tr -d '"' || true)"
model="$(tr -d '\0' 2>/dev/null < "$model_file" || true)"

case "$machine" in
  aarch64|arm64|x86_64|amd64) ;;
  armv6l|armv7l|armhf|arm*)
    refuse "32-bit ARM ($machine); install 64-bit Raspberry Pi OS (Bookworm, arm64): onnxruntime has no 32-bit ARM wheel" ;;
  *) refuse "CPU architecture $machine; the companion runs on arm64 (Raspberry Pi OS 64-bit) or amd64" ;;
esac
case "$dpkg_arch" in
  arm64|amd64) ;;
  armhf|armel|i386)
    refuse "32-bit userland ($dpkg_arch packages on a $machine kernel); reinstall with 64-bit Raspberry Pi OS (Bookworm, arm64)" ;;
  *) refuse "package architecture $dpkg_arch; the companion needs a Debian/Raspberry Pi OS arm64 or amd64 system" ;;
esac
if [ -z "$python" ]; then
  # provision.sh installs python3 from apt: on Bookworm that is 3.11.
  [ "$codename" = bookworm ] || refuse "no python3 and not Debian Bookworm ($os_release says '${codename:-?}'); use Raspberry Pi OS Bookworm, whose Python is $supported_python"
  python="$supported_python (from Bookworm's apt)"
elif [ "$python" != "$supported_python" ]; then
  refuse "Python $python; the companion is built and checked for Python $supported_python (Raspberry Pi OS / Debian Bookworm's python3)"
fi
case "$model" in
  "Raspberry Pi Model"*|"Raspberry Pi Compute Module Rev"*|"Raspberry Pi Zero W"*|"Raspberry Pi Zero Rev"*|"Raspberry Pi 2"*)
    refuse "$model has no 64-bit CPU; use a Raspberry Pi 3, 4, 5 or Zero 2 W" ;;
esac
echo "platform: ${model:-$machine} ($dpkg_arch, ${codename:-unknown release}), Python $python: supported" >&2

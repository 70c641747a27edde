#!/usr/bin/env bash
# Build (once) and cache a Debian Bookworm root for the rehearsal's devices, keyed by
# architecture + package list: prints the cached root's path.
#   bash deploy/rehearse/rootfs.sh [--arch amd64] [--cache /var/cache/companion-rehearse]
# The packages are what a field device has before provisioning (USB-stick style: the device
# itself never reaches a registry), plus sshd so the controller can reach it. --arch arm64
# builds the root for an emulated arm64 device (qemu-user through binfmt_misc: deploy/arm64/binfmt.sh).
set -euo pipefail
arch=amd64
cache=/var/cache/companion-rehearse
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    *) echo "rootfs: unknown option $1" >&2; exit 2 ;;
  esac
done
# provision.sh's packages, systemd as PID 1, sshd + sudo for Ansible, tzdata for timezones.
packages="systemd systemd-sysv dbus libpam-systemd openssh-server sudo procps iproute2 tzdata
python3 python3-venv python3-pip espeak-ng alsa-utils libportaudio2 sox sqlite3 unzip curl
ca-certificates libgomp1 acl"
[ "$arch" != arm64 ] || packages="$packages libatomic1"  # provision.sh's arm64 extra (vosk)
packages="$(echo $packages | tr ' ' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')"
key="$(printf '%s\n%s\n' "$arch" "$packages" | sha256sum | cut -c1-16)"
root="$cache/bookworm-$arch-$key"
if [ ! -f "$root/.complete" ]; then
  case "$arch" in
    amd64) ;;
    arm64) bash "$(dirname "$0")/../arm64/binfmt.sh" ;;
    *) echo "rootfs: --arch $arch: use amd64 or arm64" >&2; exit 2 ;;
  esac
  echo "rehearse: building the Bookworm $arch root in $root (debootstrap, a few minutes)" >&2
  rm -rf "$root.tmp"
  mkdir -p "$cache"
  debootstrap --arch="$arch" --variant=minbase --include="$packages" bookworm "$root.tmp/fs" >&2 \
    || { tail -n 30 "$root.tmp/fs/debootstrap/debootstrap.log" >&2 || true; exit 1; }
  chroot "$root.tmp/fs" apt-get clean
  printf '%s\n%s\n' "$arch" "$packages" > "$root.tmp/packages"
  touch "$root.tmp/.complete"
  rm -rf "$root"
  mv "$root.tmp" "$root"
fi
echo "$root/fs"

#!/usr/bin/env bash
# Make this (amd64) machine run arm64 binaries: qemu-user-static through binfmt_misc, with the
# F flag so chroots and containers (systemd-nspawn) need no qemu binary of their own. As root;
# installs qemu-user-static and binfmt-support when missing. Exit 1 if no handler can be set up.
set -euo pipefail
log() { echo "arm64-binfmt: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { log "run as root"; exit 2; }
need=""
[ -x /usr/bin/qemu-aarch64-static ] || need="$need qemu-user-static"
command -v update-binfmts >/dev/null || need="$need binfmt-support"
if [ -n "$need" ]; then
  log "installing$need"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  # shellcheck disable=SC2086
  apt-get install -y -q $need >&2
fi
# A container may start without binfmt_misc mounted or the aarch64 handler enabled.
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 >&2 || true
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { log "no aarch64 binfmt handler (qemu-user-static)"; exit 1; }
grep -q '^flags: .*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 || log "warning: handler lacks the F flag"

#!/usr/bin/env bash
# arm64 smoke: the companion installed and run on arm64 Debian Bookworm (the base of 64-bit
# Raspberry Pi OS) under qemu-user emulation, compared with this x86 machine on the same inputs.
#
#   bash deploy/arm64/smoke.sh [--dev-csv situations_dev.csv] [--n 300] [--cache DIR]
#                              [--cpu cortex-a72|cortex-a53|cortex-a76]
#
# The emulated CPU is a Pi's: cortex-a72 (Pi 4; the same ARMv8.0 instruction set as the Pi 3's
# and Zero 2 W's A53, so onnxruntime picks the same kernels), cortex-a76 (Pi 5: dot product).
# 1. an arm64 root (deploy/arm64/root.sh, cached under --cache by package list), mounted as a
#    fresh overlay every run so the cache stays clean;
# 2. a wheelhouse built on the host (deploy/arm64/wheels.sh: every runtime dependency must have
#    an aarch64 wheel) installed offline into /opt/companion/.venv in the root, which runs in
#    a network namespace of its own (no network at all);
# 3. in the root: `companion demo`, `companion demo --voice`, `companion doctor`;
# 4. parity with x86: emotion top-1 agreement >= 99.5 % and embedding cosine >= 0.999 on --n dev
#    texts (one process each side), the same story choices from the shipped bank encodings, and
#    the voice demo storing the same values on both.
# Exit 0 only if every step passes. Mounts are undone on any exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"

cache=/var/cache/companion-arm64 dev_csv="" n=300 host_py="$repo/.venv/bin/python"
cpu=cortex-a72
while [ $# -gt 0 ]; do
  case "$1" in
    --dev-csv) dev_csv="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "smoke.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$dev_csv" ]; then
  for c in ../shared/data/empatheticdialogues/situations_dev.csv \
           /work/shared/data/empatheticdialogues/situations_dev.csv; do
    [ -f "$c" ] && { dev_csv="$c"; break; }
  done
fi
[ -f "$dev_csv" ] || { echo "smoke.sh: no dev CSV (label,content); pass --dev-csv FILE" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "smoke.sh: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }

t0=$(date +%s)
passed=0
step() { echo "== arm64 smoke [$(( $(date +%s) - t0 )) s] $*"; }
ok() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { echo "arm64 smoke: FAIL: $*" >&2; echo "smoke: $passed passed, 1 failed"; exit 1; }

work="$(mktemp -d /var/tmp/companion-arm64-smoke.XXXXXX)"
m="$work/root"
host_jobs=()
cleanup() {
  for pid in "${host_jobs[@]}"; do kill "$pid" 2>/dev/null || true; done
  if mountpoint -q "$m" 2>/dev/null || grep -q " $m" /proc/mounts; then
    # Innermost first; lazy so a busy mount (a killed emulated process) still goes.
    grep -o " $m[^ ]*" /proc/mounts | sort -r | while read -r p; do umount -l "$p" || true; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "arm64 root"
root="$(bash deploy/arm64/root.sh --cache "$cache")"

# The x86 references run on the host while the emulated steps run (two cores).
step "x86 reference (in the background)"
"$host_py" deploy/arm64/parity.py encode --csv "$dev_csv" --n "$n" --out "$work/x86.npz" \
  > "$work/x86-parity.log" 2>&1 & host_jobs+=($!)
"$host_py" -m companion demo --voice --home "$work/x86-voice" > "$work/x86-voice.log" 2>&1 &
host_jobs+=($!)

step "wheelhouse (aarch64, Python $(bash deploy/check-platform.sh --python))"
bash deploy/arm64/wheels.sh "$work/wheels" --python "$host_py" --cache "$cache" \
  --python-version "$(bash deploy/check-platform.sh --python)" \
  || fail "a runtime dependency has no aarch64 wheel (above)"
ok "every runtime dependency has an aarch64 wheel"

mkdir -p "$m" "$work/upper" "$work/ovl"
if ! mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/ovl" "$m" 2>/dev/null; then
  cp -a "$root/." "$m/"  # no overlayfs here: a plain copy is just as fresh, only slower
fi
mount -t proc proc "$m/proc"
mount -t sysfs sysfs "$m/sys"
mount --rbind /dev "$m/dev" && mount --make-rslave "$m/dev"
mount -t tmpfs -o mode=1777 tmpfs "$m/tmp"
mkdir -p "$m/wheels" && mount --bind -o ro "$work/wheels" "$m/wheels"
# qemu-user shows the host's x86 /proc/cpuinfo, which onnxruntime's CPU detection cannot parse
# (it segfaults on import): show what a Pi's kernel shows for the emulated core instead.
case "$cpu" in
  cortex-a53) part=0xd03 features="fp asimd evtstrm crc32 cpuid" ;;
  cortex-a72) part=0xd08 features="fp asimd evtstrm crc32 cpuid" ;;
  cortex-a76) part=0xd0b features="fp asimd evtstrm crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp" ;;
  *) fail "--cpu $cpu: use cortex-a53, cortex-a72 or cortex-a76" ;;
esac
for i in $(seq 0 $(( $(nproc) - 1 ))); do
  printf 'processor\t: %s\nBogoMIPS\t: 108.00\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: %s\nCPU revision\t: 3\n\n' \
    "$i" "$features" "$part"
done > "$work/cpuinfo"
mount --bind -o ro "$work/cpuinfo" "$m/proc/cpuinfo"
cp deploy/arm64/parity.py "$m/opt/parity.py"
cp "$dev_csv" "$m/tmp/dev.csv"  # evaluation data: lives only in this run's tmpfs
in_root() {  # in its own network namespace: no route anywhere, nothing of the host's listening
  unshare --net chroot "$m" /usr/bin/env -i PATH=/opt/companion/.venv/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TZ=UTC QEMU_CPU="$cpu" "$@"
}
arch="$(in_root python3 -c 'import platform; print(platform.machine())')"
[ "$arch" = aarch64 ] || fail "the root runs as $arch, not aarch64"
in_root bash /dev/stdin < deploy/check-platform.sh || fail "check-platform.sh refuses the arm64 root"
ok "arm64 root runs as $arch ($cpu) and check-platform.sh accepts it"

step "install (offline, from the wheelhouse)"
# pip runs from its wheel and skips byte-compiling: both only save emulated minutes.
in_root python3 -m venv --without-pip /opt/companion/.venv
pip_whl="$(cd "$work/wheels" && ls pip-*.whl | head -1)"
in_root /opt/companion/.venv/bin/python "/wheels/$pip_whl/pip" install -q --no-compile --no-index \
  --find-links /wheels companion
in_root companion --version
ok "installed offline from the wheelhouse"

step "companion demo"
in_root companion demo --home /tmp/demo | tee "$work/demo.log"
grep -q "10 of 10 stored values are what the participant meant, 0 missing, 0 wrong" "$work/demo.log" \
  || fail "companion demo did not store 10 of 10 right"
ok "companion demo"

step "companion demo --voice"
in_root companion demo --voice --home /tmp/voice | tee "$work/voice.log"
grep -q ", 0 wrong" "$work/voice.log" || fail "companion demo --voice stored a wrong value"
ok "companion demo --voice"

step "companion doctor"
# A chroot has no sound card (and no systemctl: doctor says "service not checked").
in_root companion doctor --home /tmp/voice --skip audio | tee "$work/doctor.log" \
  || fail "companion doctor found a problem"
ok "companion doctor"

step "parity: encode $n texts on arm64 (one process)"
in_root python /opt/parity.py encode --csv /tmp/dev.csv --n "$n" --out /tmp/arm64.npz
cp "$m/tmp/arm64.npz" "$work/arm64.npz"
for pid in "${host_jobs[@]}"; do
  wait "$pid" || { cat "$work/x86-parity.log" "$work/x86-voice.log" >&2; fail "x86 reference failed"; }
done
host_jobs=()
step "parity: x86 vs arm64"
"$host_py" deploy/arm64/parity.py compare "$work/x86.npz" "$work/arm64.npz" \
  || fail "model parity below threshold"
ok "model parity"

step "parity: voice demo stores the same values"
values() {  # the stored answers, one line each
  "$host_py" - "$1" <<'PY'
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(
        "SELECT instrument, item, value, status FROM self_reports ORDER BY id"):
    print(*row)
PY
}
values "$work/x86-voice/companion.db" > "$work/x86-values.txt"
values "$m/tmp/voice/companion.db" > "$work/arm64-values.txt"
[ -s "$work/x86-values.txt" ] || fail "the x86 voice demo stored nothing"
diff "$work/x86-values.txt" "$work/arm64-values.txt" || fail "voice demo values differ (above)"
ok "voice demo: the same $(wc -l < "$work/x86-values.txt") stored values on x86 and arm64"

step "done"
echo "smoke: $passed passed, 0 failed"

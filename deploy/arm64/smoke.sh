#!/usr/bin/env bash
# arm64 smoke: the companion installed and run on arm64 Debian Bookworm (the base of 64-bit
# Raspberry Pi OS) under qemu-user emulation, compared with this x86 machine on the same inputs.
#
#   bash deploy/arm64/smoke.sh [--dev-csv situations_dev.csv] [--n 300] [--cache DIR]
#                              [--cpu cortex-a72|cortex-a53|cortex-a76] [--model-dir DIR]
#
# The emulated CPU is a Pi's: cortex-a72 (Pi 4; the same ARMv8.0 instruction set as the Pi 3's
# and Zero 2 W's A53, so onnxruntime picks the same kernels), cortex-a76 (Pi 5: dot product).
# --model-dir DIR: build the companion with the model in DIR (one companion-empathy-*.onnx, its
# .onnx.json and tokenizer) instead of models/, with its bank encodings computed on x86 first,
# as if it had landed: to check a candidate model's parity before it is committed.
# 1. an arm64 root (deploy/arm64/root.sh, cached under --cache by package list) and, on it, a
#    venv holding the runtime dependencies (cached by root + dependency wheels; built by pip in
#    the emulated root the first time), mounted as a fresh overlay every run;
# 2. a wheelhouse built on the host (deploy/arm64/wheels.sh: every runtime dependency must have
#    an aarch64 wheel); the companion installed offline from it by pip in the root, which runs
#    in a network namespace of its own (no network at all);
# 3. in the root: `companion demo`, `companion demo --voice`, `companion doctor`, `companion
#    speak` (the neural voice, piper, from the `voice` extra);
# 4. parity with x86 on --n dev texts (one process each side) and the story choices from the
#    shipped bank encodings: the goals (agreement >= 99.5 %, cosine >= 0.999, same choices) are
#    reported; the step fails below parity.py's regression guard (agreement 99 %, cosine 0.985,
#    96 % same choices); the voice demo storing the same values on both.
# The x86 references and the arm64 parity encoding run in the background beside the demos.
# Exit 0 only if every step passes; the last line gives each step's seconds. Mounts are undone
# on any exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"

cache=/var/cache/companion-arm64 dev_csv="" n=300 host_py="$repo/.venv/bin/python"
cpu=cortex-a72 model_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dev-csv) dev_csv="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --model-dir) model_dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
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
dev_csv="$(realpath "$dev_csv")"
case "$cpu" in
  cortex-a53|cortex-a72|cortex-a76) ;;
  *) echo "smoke.sh: --cpu $cpu: use cortex-a53, cortex-a72 or cortex-a76" >&2; exit 2 ;;
esac
if [ -n "$model_dir" ]; then
  onnx="$(ls "$model_dir"/companion-empathy-*.onnx 2>/dev/null | head -1 || true)"
  [ -n "$onnx" ] && [ -f "$onnx.json" ] \
    || { echo "smoke.sh: --model-dir $model_dir: no companion-empathy-*.onnx with its .onnx.json" >&2; exit 2; }
fi
[ "$(id -u)" -eq 0 ] || { echo "smoke.sh: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }

work="$(mktemp -d /var/tmp/companion-arm64-smoke.XXXXXX)"
m="$work/root"
t0=$(date +%s)
passed=0 timings="" current="" current_t=$t0 current_cpu=0
# CPU seconds (user + system) of every finished child: unlike wall time, not inflated by other
# jobs sharing the cores. Background jobs count in the step that waits for them.
cpu_now() {  # sets cpu_used; `times` runs in this shell (in $(...) it would see a subshell's children)
  times > "$work/times"
  cpu_used=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
                  printf "%d", t }' "$work/times")
}
step() {  # step NAME TEXT: print the elapsed time, note how long the previous step took
  local now; now=$(date +%s); cpu_now
  [ -z "$current" ] || timings="$timings $current=$((now - current_t))s/$((cpu_used - current_cpu))cpu"
  current="$1" current_t=$now current_cpu=$cpu_used
  echo "== arm64 smoke [$((now - t0)) s] ${*:2}"
}
ok() { passed=$((passed + 1)); echo "ok: $*"; }
fail() {  # the timings too: a failed run's profile is as useful
  echo "arm64 smoke: FAIL: $*" >&2
  step failed
  echo "smoke: $passed passed, 1 failed in $(( $(date +%s) - t0 )) s, $cpu_used CPU s ($cpu);$timings"
  exit 1
}

bg_jobs=()
cleanup() {
  for pid in "${bg_jobs[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # Innermost first; lazy so a busy mount (a killed emulated process) still goes.
  grep -o " $work/[^ ]*" /proc/mounts | sort -r | while read -r p; do umount -l "$p" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step root "arm64 root"
root="$(bash deploy/arm64/root.sh --cache "$cache")"

# The tree the wheel is built from: this checkout, or a copy of it with the candidate model and
# that model's bank encodings (computed here on x86, as models/bank_cache.py does for a release).
src="$repo"
if [ -n "$model_dir" ]; then
  step candidate "candidate model from $model_dir"
  src="$work/src"
  mkdir -p "$src"
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -c | tar -x -C "$src"
  rm -f "$src"/models/companion-empathy-*.onnx "$src"/models/companion-empathy-*.json \
    "$src"/companion/data/bank-companion-empathy-*.npz
  "$host_py" deploy/arm64/swap_model.py "$onnx" "$src" || fail "taking the model from $model_dir"
  (cd "$src" && PYTHONPATH="$src" "$host_py" models/bank_cache.py) || fail "bank encodings of the candidate"
  ok "candidate $(basename "$onnx") built into the tree, bank encodings computed on x86"
fi

# The voice demo's homes speak with pyttsx3: piper renders many times slower than real time
# under emulation (a whole session would take most of an hour); the speak step checks piper.
voice_home() {  # voice_home DIR: a new home whose config.toml only picks the engine
  mkdir -p -m 0700 "$1" && printf '[voice]\ntts = "pyttsx3"\n' > "$1/config.toml" && chmod 0600 "$1/config.toml"
}
# The x86 references run on the host while the emulated steps run.
step x86 "x86 reference (in the background)"
voice_home "$work/x86-voice"
(cd "$src" && PYTHONPATH="$src" exec "$host_py" deploy/arm64/parity.py encode --csv "$dev_csv" \
  --n "$n" --out "$work/x86.npz") > "$work/x86-parity.log" 2>&1 & bg_jobs+=($!)
(cd "$src" && PYTHONPATH="$src" exec "$host_py" -m companion demo --voice --home "$work/x86-voice") \
  > "$work/x86-voice.log" 2>&1 & bg_jobs+=($!)

step wheels "wheelhouse (aarch64, Python $(bash deploy/check-platform.sh --python))"
bash "$src/deploy/arm64/wheels.sh" "$work/wheels" --python "$host_py" --cache "$cache" \
  --python-version "$(bash deploy/check-platform.sh --python)" \
  || fail "a runtime dependency has no aarch64 wheel (above)"
ok "every runtime dependency has an aarch64 wheel"

bash deploy/arm64/cpuinfo.sh "$cpu" > "$work/cpuinfo"
mount_root() {  # mount_root TARGET LOWER UPPER WORK: a fresh overlay with what the steps need
  local t=$1
  mkdir -p "$t" "$3" "$4"
  if ! mount -t overlay overlay -o "lowerdir=$2,upperdir=$3,workdir=$4" "$t" 2>/dev/null; then
    # No overlayfs here: a plain copy is just as fresh, only slower.
    local l; for l in $(echo "$2" | tr ':' '\n' | tac); do cp -a "$l/." "$t/"; done
  fi
  mount -t proc proc "$t/proc"
  mount -t sysfs sysfs "$t/sys"
  mount --rbind /dev "$t/dev" && mount --make-rslave "$t/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$t/tmp"
  mkdir -p "$t/wheels" && mount --bind -o ro "$work/wheels" "$t/wheels"
  # qemu-user shows the host's x86 /proc/cpuinfo, which onnxruntime cannot parse (it
  # segfaults on import): show what a Pi's kernel shows for the emulated core instead.
  mount --bind -o ro "$work/cpuinfo" "$t/proc/cpuinfo"
}
unmount_root() { grep -o " $1[^ ]*" /proc/mounts | sort -r | while read -r p; do umount -l "$p"; done; }
chroot_in() {  # chroot_in ROOT CMD...: in its own network namespace (no route, nothing listening)
  local r=$1; shift
  unshare --net chroot "$r" /usr/bin/env -i PATH=/opt/companion/.venv/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TZ=UTC QEMU_CPU="$cpu" "$@"
}
in_root() { chroot_in "$m" "$@"; }
site=opt/companion/.venv/lib/python3.11/site-packages
pip_whl="$(cd "$work/wheels" && ls pip-*.whl | head -1)"
# pip does not byte-compile under emulation: the host compiles instead (the same CPython 3.11
# bytecode), recording the paths the device sees.
host_compile() { "$host_py" -m compileall -q -j 0 -s "$1" -p / "$1/$2" > /dev/null; }

# The dependencies' venv, pip included: built once per root + dependency wheels (a cold cache
# pays the emulated pip install of numpy, onnxruntime, vosk...), then a read-only lower layer.
# (pip run from its wheel would compile its own source in every run: ~2 min emulated.)
deps_key="$( (echo pip-in-venv; basename "$root"; cd "$work/wheels" && ls | grep -v '^companion-') \
  | sha256sum | cut -c1-12)"
layer="$cache/venv-$deps_key"
if [ -f "$layer/.complete" ]; then
  step venv "dependencies' venv: reusing $layer"
else
  step venv "dependencies' venv (cold: pip install in the emulated root, kept in $layer)"
  rm -rf "$cache"/venv-*  # one layer kept: older ones belong to older wheels or roots
  mount_root "$work/build" "$root" "$layer.tmp/fs" "$layer.tmp/ovl"
  mapfile -t deps < <("$host_py" deploy/device_requirements.py)
  chroot_in "$work/build" python3 -m venv --without-pip /opt/companion/.venv
  chroot_in "$work/build" /opt/companion/.venv/bin/python "/wheels/$pip_whl/pip" install -q \
    --no-compile --no-cache-dir --no-index --find-links /wheels "${deps[@]}" pip \
    || fail "installing the dependencies from the wheelhouse"
  unmount_root "$work/build"
  rm -rf "$layer.tmp/ovl" "$layer.tmp/fs/tmp" "$layer.tmp/fs/wheels"
  host_compile "$layer.tmp/fs" "$site"
  touch "$layer.tmp/.complete"
  mv "$layer.tmp" "$layer"
fi
mount_root "$m" "$layer/fs:$root" "$work/upper" "$work/ovl"
cp deploy/arm64/parity.py "$m/opt/parity.py"
cp "$dev_csv" "$m/tmp/dev.csv"  # evaluation data: lives only in this run's tmpfs
arch="$(in_root python3 -c 'import platform; print(platform.machine())')"
[ "$arch" = aarch64 ] || fail "the root runs as $arch, not aarch64"
in_root bash /dev/stdin < deploy/check-platform.sh || fail "check-platform.sh refuses the arm64 root"
ok "arm64 root runs as $arch ($cpu) and check-platform.sh accepts it"

step install "install (offline, from the wheelhouse)"
# pip resolves every requirement against the wheelhouse; the cached venv already has them.
in_root /opt/companion/.venv/bin/python -m pip install -q --no-compile --no-cache-dir \
  --no-index --find-links /wheels "companion[voice]" || fail "pip install companion[voice]"
host_compile "$m" "$site/companion"
in_root companion --version
# The demos use pocketsphinx; a device may use vosk, whose native library must load too.
in_root python -c 'import vosk' || fail "vosk's native library does not load on arm64"
ok "installed offline from the wheelhouse; vosk's native library loads"

# Beside the demos: the parity encoding (one process: emulation pays the model load once).
in_root python /opt/parity.py encode --csv /tmp/dev.csv --n "$n" --out /tmp/arm64.npz \
  > "$work/arm64-parity.log" 2>&1 & parity_job=$!; bg_jobs+=($parity_job)

step demo "companion demo"
in_root companion demo --home /tmp/demo | tee "$work/demo.log"
grep -q "10 of 10 stored values are what the participant meant, 0 missing, 0 wrong" "$work/demo.log" \
  || fail "companion demo did not store 10 of 10 right"
ok "companion demo"

step voice "companion demo --voice"
voice_home "$m/tmp/voice"
in_root companion demo --voice --home /tmp/voice | tee "$work/voice.log"
grep -q ", 0 wrong" "$work/voice.log" || fail "companion demo --voice stored a wrong value"
ok "companion demo --voice"

step doctor "companion doctor"
# A chroot has no sound card (and no systemctl: doctor says "service not checked").
in_root companion doctor --home /tmp/voice --skip audio | tee "$work/doctor.log" \
  || fail "companion doctor found a problem"
ok "companion doctor"

step speak "companion speak (the neural voice)"
# The voice a session speaks with, through a session's code: piper with its pinned voice.
in_root companion init --home /tmp/voice --tts piper > /dev/null || fail "companion init --tts piper"
in_root companion speak --home /tmp/voice "Thank you for sharing that with me." \
  --to /tmp/speak.wav | tee "$work/speak.log" || fail "companion speak"
grep -q "spoken by piper" "$work/speak.log" || fail "companion speak did not use piper"
in_root python3 -c 'import sys, wave; w = wave.open("/tmp/speak.wav"); sys.exit(w.getnframes() < w.getframerate())' \
  || fail "companion speak wrote under a second of audio"
ok "companion speak: piper on arm64"

step parity "parity: encode $n texts on arm64 (waiting for the background process)"
wait "$parity_job" || { cat "$work/arm64-parity.log" >&2; fail "parity encoding on arm64"; }
cat "$work/arm64-parity.log"
cp "$m/tmp/arm64.npz" "$work/arm64.npz"
for pid in "${bg_jobs[@]}"; do
  [ "$pid" = "$parity_job" ] && continue
  wait "$pid" || { cat "$work/x86-parity.log" "$work/x86-voice.log" >&2; fail "x86 reference failed"; }
done
bg_jobs=()
step compare "parity: x86 vs arm64"
"$host_py" deploy/arm64/parity.py compare "$work/x86.npz" "$work/arm64.npz" \
  || fail "model parity below threshold"
ok "model parity"

step values "parity: voice demo stores the same values"
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

step done "done"
cpu_now
echo "smoke: $passed passed, 0 failed in $(( $(date +%s) - t0 )) s, $cpu_used CPU s ($cpu);$timings"

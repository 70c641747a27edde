#!/usr/bin/env bash
# Wheelhouse for an arm64 device, built on any host, and the check that nothing needs compiling
# on a Pi: every runtime dependency of the companion and of its `voice` extra (pyproject.toml,
# resolved with their own dependencies) must come as a wheel for aarch64 (manylinux, glibc <= 2.36 = Bookworm) or as a
# pure-Python wheel, for the supported Python.
#
#   bash deploy/arm64/wheels.sh OUTDIR [--python-version 3.11] [--python PYTHON] [--cache DIR]
#
# With --cache, the dependencies' wheels are kept in DIR/wheels-aarch64-<key> (key: Python
# version + the dependency list) and reused while pyproject.toml's dependencies are unchanged.
# Exit 1 with one line naming what has no aarch64 wheel. OUTDIR then holds the companion's wheel
# and everything `pip install --no-index --find-links OUTDIR 'companion[voice]'` needs on the device
# (pip included, so a venv made --without-pip can install from it).
set -euo pipefail
cd "$(dirname "$0")/../.."

out="" pyver=3.11 py="${PYTHON:-.venv/bin/python}" cache=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) pyver="$2"; shift 2 ;;
    --python) py="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    -*) echo "wheels.sh: unknown option $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
[ -n "$out" ] || { echo "wheels.sh: give the output directory" >&2; exit 2; }
mkdir -p "$out"
abi="cp${pyver/./}"

# Packages published only as an sdist that are pure Python (so the same wheel serves every
# platform): built here, and checked to really be pure. Nothing else may be an sdist.
pure_sdists="srt"

# Runtime dependencies and the neural voice's (the `voice` extra, which devices install), read
# from the one place they are declared.
mapfile -t deps < <("$py" deploy/device_requirements.py)

dest="$out"
if [ -n "$cache" ]; then
  key="$(printf '%s\n' "$pyver" "$pure_sdists" "${deps[@]}" | sha256sum | cut -c1-12)"
  dest="$cache/wheels-aarch64-$key"
fi
if [ -f "$dest/.complete" ]; then
  echo "wheels.sh: reusing the dependencies' wheels in $dest" >&2
else
rm -rf "$dest" && mkdir -p "$dest"
for p in $pure_sdists; do
  "$py" -m pip wheel -q --no-deps --no-binary :all: "$p" -w "$dest" 2>&1 | grep -v "is ignored" >&2 || true
  ls "$dest"/"$p"-*-py3-none-any.whl >/dev/null 2>&1 || {
    echo "wheels.sh: $p is no longer a pure-Python package: it would compile on the device" >&2
    exit 1
  }
done

# pip does not widen a manylinux_2_36 tag to older glibc versions: list them all.
plats=()
for v in $(seq 36 -1 17); do plats+=(--platform "manylinux_2_${v}_aarch64"); done
plats+=(--platform manylinux2014_aarch64)
if ! "$py" -m pip download -q --only-binary=:all: "${plats[@]}" --python-version "$pyver" \
    --implementation cp --abi "$abi" --find-links "$dest" -d "$dest" "${deps[@]}" pip \
    > "$dest/.download.log" 2>&1; then
  missing="$(grep -o 'No matching distribution found for [^ ]*' "$dest/.download.log" | head -1)"
  echo "wheels.sh: no aarch64 wheel for Python $pyver: ${missing:-see $dest/.download.log}" >&2
  exit 1
fi
touch "$dest/.complete"
fi
[ "$dest" = "$out" ] || cp "$dest"/*.whl "$out"/

# The companion itself (pure Python, with the model inside).
"$py" -m pip wheel -q --no-deps . -w "$out" 2>&1 | grep -v "is ignored" >&2 || true
ls "$out"/companion-*-py3-none-any.whl >/dev/null

bad=""
for w in "$out"/*.whl; do
  case "$(basename "$w")" in
    *-any.whl|*aarch64*.whl) ;;
    *) bad="$bad $(basename "$w")" ;;
  esac
done
[ -z "$bad" ] || { echo "wheels.sh: not for aarch64:$bad" >&2; exit 1; }
n=$(ls "$out"/*.whl | wc -l)
echo "wheels.sh: $n wheels for aarch64 / Python $pyver in $out, nothing to compile on the device" >&2

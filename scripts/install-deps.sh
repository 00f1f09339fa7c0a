#!/usr/bin/env bash
# Installs the Debian 12 packages moebench builds with (DESIGN §5). Only missing packages are
# installed; safe to run repeatedly. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libcli11-dev libsqlite3-dev libopenblas-dev
  libopenmpi-dev openmpi-bin libtomlplusplus-dev nlohmann-json3-dev
  # the fuzz preset (scripts/test.sh, scripts/fuzz.sh): clang 14, its libFuzzer and sanitizer
  # runtimes (only recommended by clang, so named here), and clang's OpenMP
  clang libclang-rt-14-dev libomp-14-dev
  # experiments/*/run.sh read moebench's JSON with it
  python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

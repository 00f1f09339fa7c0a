#!/usr/bin/env bash
# Quick start: install dependencies, build, and train the small MoE-GPT of
# sample_configs/quickstart.toml. Extra arguments go to `moebench run`.
# Each quick start replaces the checkpoints the previous one left in runs/quickstart
# (--overwrite; the run store keeps every run), unless you pass --resume or --out yourself.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
overwrite=(--overwrite)
for a in "$@"; do
  case "$a" in --resume|--resume=*|--out|--out=*|--overwrite) overwrite=() ;; esac
done
exec build/release/cli/moebench run sample_configs/quickstart.toml "${overwrite[@]}" "$@"

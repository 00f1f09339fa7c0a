#!/usr/bin/env bash
# Quick start: install dependencies, build, and train the small MoE-GPT of
# sample_configs/quickstart.toml. Extra arguments go to `moebench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
exec build/release/cli/moebench run sample_configs/quickstart.toml "$@"

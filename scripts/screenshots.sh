#!/usr/bin/env bash
# Screenshots for the README: trains two small runs into a fresh store, then opens
# moebench-gui under Xvfb and saves the main window to docs/screenshots/main-window.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
command -v xvfb-run >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq xvfb xauth; }
scripts/build.sh release
B=build/release/cli/moebench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$B ablate sample_configs/quickstart.toml --db "$work/runs.db" --experiment screenshots --steps 100 \
  --set run.out_dir="$work/out" --vary strategy.name=expert_centric,hier_a2a > "$work/ablate.log"
mkdir -p docs/screenshots
xvfb-run -a -s "-screen 0 1280x800x24" build/release/gui/moebench-gui "$work/runs.db" --select-all \
  --screenshot docs/screenshots/main-window.png

#!/usr/bin/env bash
# Screenshots for docs/gui.md, of real runs: measures this machine's sgemm rate into a fresh
# store (the roofline's peak) and the machine itself into a cluster file (moebench calibrate),
# trains an ablation of three strategies on the quickstart model (4 ranks on 2 virtual nodes, two
# repeats each: the ablation's error bars), predicts each strategy's first repeat from its
# recorded routing on the calibrated cluster file and the quickstart once on the default rates
# (experiment "predictions"), then opens moebench-gui under Xvfb and saves every page and run view
# to docs/screenshots/<view>.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
command -v xvfb-run >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq xvfb xauth; }
scripts/build.sh release
B=build/release/cli/moebench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$B bench gemm --iters 3 --db "$work/runs.db" > "$work/bench.log"
$B calibrate --quick --ranks 4 --out "$work/here.toml" > "$work/calibrate.log"
$B ablate sample_configs/quickstart.toml --db "$work/runs.db" --experiment strategies --steps 100 --repeats 2 \
  --set run.out_dir="$work/out" --vary strategy.name=expert_centric,hier_a2a,data_centric > "$work/ablate.log"
# The simulator's prediction of each strategy's first repeat, from its recorded routing on this
# machine's calibrated cluster file (paired by its trace_run tag), and of the quickstart on the
# default rates (paired by config); another experiment, so the other views show the measured runs.
i=0
for strategy in expert_centric hier_a2a data_centric; do
  i=$((i + 1))
  $B simulate sample_configs/quickstart.toml --db "$work/runs.db" --set store.experiment=predictions \
    --set strategy.name=$strategy --routing "trace:strategies.$i.1" --cluster "$work/here.toml" --nodes 2 \
    --steps 3 > "$work/simulate-$strategy.log"
done
$B simulate sample_configs/quickstart.toml --db "$work/runs.db" --set store.experiment=predictions --steps 3 \
  > "$work/simulate-defaults.log"
mkdir -p docs/screenshots
rm -f docs/screenshots/*.png
# The strategies experiment selected: its runs fill every view.
xvfb-run -a -s "-screen 0 1280x800x24" build/release/gui/moebench-gui "$work/runs.db" --select-experiment strategies \
  --metric step_ms --config sample_configs/quickstart.toml --screenshot-all docs/screenshots

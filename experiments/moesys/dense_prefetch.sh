#!/usr/bin/env bash
# MoESys §III-B2, Algorithm 1 (dense half of the 2D prefetch), MEASURED on this machine:
# sample_configs/quickstart.toml (4 ranks) trained 60 steps with the dense parameters
#   replicated       storage.dense = "replicated" (all-reduce of the gradients)
#   zero3 prefetch   storage.dense = "zero3", dense_prefetch = true (layer i+1 gathered while i computes)
#   zero3 on demand  storage.dense = "zero3", dense_prefetch = false (each layer gathered when used)
# The median step time of steps 11-60 (the median of 3 runs of each), and the bytes sent per step.
#   MOEBENCH=path/to/moebench experiments/moesys/dense_prefetch.sh   (default: build/release/cli/moebench)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mb="${MOEBENCH:-$root/build/release/cli/moebench}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() {  # name, sets...
  local name=$1
  shift
  for r in 1 2 3; do
    "$mb" run "$root/sample_configs/quickstart.toml" --set train.steps=60 --set train.eval_every=0 \
      --set store.enabled=false --set run.out_dir="$work/$name$r" "$@" > "$work/$name$r.log" 2>&1 ||
      { cat "$work/$name$r.log"; exit 1; }
  done
}
run replicated --set storage.dense=replicated
run prefetch --set storage.dense=zero3 --set storage.dense_prefetch=true
run on_demand --set storage.dense=zero3 --set storage.dense_prefetch=false
python3 - "$work" <<'PY'
import re, statistics, sys
w = sys.argv[1]
print("== storage.dense on quickstart.toml (4 ranks), MEASURED on this machine: median step ms of steps 11-60, median of 3 runs")
for name in ("replicated", "prefetch", "on_demand"):
    meds, mb = [], None
    for r in (1, 2, 3):
        steps = [l for l in open(f"{w}/{name}{r}.log") if l.startswith("step ")]
        ms = [float(re.search(r"\|\s+([0-9.]+) ms", l).group(1)) for l in steps[10:]]
        meds.append(statistics.median(ms))
        m = re.search(r"sent intra ([0-9.]+) MB inter ([0-9.]+) MB", steps[-1])
        mb = float(m.group(1)) + float(m.group(2))
    print(f"{name:12s} {statistics.median(meds):7.2f} ms/step  (runs: {', '.join(f'{x:.2f}' for x in meds)})  sent {mb:.2f} MB/step (rank 0)")
PY

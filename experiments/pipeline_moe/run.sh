#!/usr/bin/env bash
# Pipeline MoE Table 2 (small setting, 32 V100), PREDICTED by moebench on the paper's cluster
# (sample_configs/clusters/ppmoe.toml: 4 nodes x 8 V100, NVLink 300 GB/s, IB 12.5 GB/s): the
# throughput per GPU of each layout, simulated (`moebench simulate`, every rank's step graph with
# its TP all-reduces, pipeline stages and all-to-alls replayed over the cluster's links), and the
# speed ratio to the slowest dense layout. Prints paper vs predicted; exits 1 when the paper's
# speed-ratio ordering does not hold: PPMoE above DPMoE (DP+EP) above DPMoE (DP+TP+EP). The dense
# rows' order is printed beside the paper's but not required (see README.md here).
#   MOEBENCH=path/to/moebench experiments/pipeline_moe/run.sh   (default: build/release/cli/moebench)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mb="${MOEBENCH:-$root/build/release/cli/moebench}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tokens=$((64 * 2048))  # global batch x sequence, every row

# name  kind  paper-throughput  paper-ratio  --set ...
rows=(
  "Dense_TP8_PP4    dense 3244 -     parallel.tp=8 parallel.vocab_parallel=true parallel.pp=4 parallel.microbatches=16"
  "Dense_DP4_TP8    dense 4174 -     parallel.tp=8 parallel.vocab_parallel=true"
  "Dense_DP32       dense 5120 -     "
  "DPMoE_DP32_EP    moe   2147 66.2  strategy.name=\"expert_centric\""
  "DPMoE_DP4_TP8_EP moe   218  6.7   strategy.name=\"expert_centric\" parallel.tp=8 parallel.vocab_parallel=true"
  "PPMoE_TP8_PP4_EP moe   2708 81.4  strategy.name=\"ppmoe\" parallel.tp=8 parallel.vocab_parallel=true parallel.pp=4 parallel.microbatches=16"
)
: > "$work/results"
for row in "${rows[@]}"; do
  read -r name kind paper ratio sets <<< "$row"
  args=()
  for s in $sets; do args+=(--set "$s"); done
  [ "$kind" = dense ] && args+=(--set "moe.moe_layers=[]")
  "$mb" simulate "$here/gpt_medium_moe64.toml" "${args[@]}" --db "$work/runs.db" --json > "$work/s.json"
  ms=$(python3 -c "import json; print(json.load(open('$work/s.json'))['mean_step_ms'])")
  echo "$name $kind $paper $ratio $ms" >> "$work/results"
done
python3 - "$work/results" "$tokens" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
tokens = int(sys.argv[2])
tput = {r[0]: tokens / (float(r[4]) / 1e3) / 32 for r in rows}
base = min(tput[r[0]] for r in rows if r[1] == "dense")
paper_base = min(float(r[2]) for r in rows if r[1] == "dense")
print("== Table 2, small setting (0.3B backbone, 6.7B MoE), 32 V100: tokens/s per GPU")
print(f"{'layout':18s} {'paper':>8s} {'predicted':>10s} {'paper ratio':>12s} {'predicted ratio':>16s} {'ms/step (predicted)':>20s}")
for name, kind, paper, ratio, ms in rows:
    pr = f"{tput[name] / base * 100:.1f}%" if kind == "moe" else "-"
    pap = f"{ratio}%" if kind == "moe" else "-"
    print(f"{name:18s} {paper:>8s} {tput[name]:10.0f} {pap:>12s} {pr:>16s} {float(ms):20.1f}")
print(f"(ratios against the slowest dense layout: paper {paper_base:.0f}, predicted {base:.0f} tokens/s per GPU)")
fail = False
for a, b in [("PPMoE_TP8_PP4_EP", "DPMoE_DP32_EP"), ("DPMoE_DP32_EP", "DPMoE_DP4_TP8_EP")]:
    ok = tput[a] > tput[b]
    print(f"  {a} above {b} (paper: yes): {'yes' if ok else 'NO'}")
    fail |= not ok
for a, b in [("Dense_DP32", "Dense_DP4_TP8"), ("Dense_DP4_TP8", "Dense_TP8_PP4")]:
    print(f"  (dense, not checked) {a} above {b} (paper: yes): {'yes' if tput[a] > tput[b] else 'no'}")
if fail:
    print("RESULT: the paper's ordering does not hold (see above)")
    sys.exit(1)
print("RESULT: Table 2's speed-ratio ordering holds (predicted)")
PY

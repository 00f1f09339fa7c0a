#!/usr/bin/env bash
# MoESys (moesys.txt) with moebench:
#   Fig. 12, MEASURED on this machine: ring-memory offloaded inference (§III-C2, `moebench infer
#   --ring K`, core/include/moebench/storage/ring_memory.h). ring_model.toml (4 MoE blocks of 8
#   experts, hidden 256) is trained for 2 steps, then generates 24 tokens greedily after a
#   40-token prompt:
#     computation         every expert resident (no ring)
#     expert movement     the loads' summed time (a ring of K = 2 slots, no prefetch: every block
#                         loaded when its forward asks)
#     overlapped          the ring with calculation-released-load (loads run ahead on the loader)
#     original offloading the ring without prefetch (each load, then the block's computation)
#   beside the paper's (433 / 414 / 447 / 851 ms). Exits 1 when a ring run's tokens differ from
#   the resident run's or the device tier is not smaller; the times are reported, not required.
# Exits 1 also when a predicted headline has the wrong direction (after the measured part).
#   MOEBENCH=path/to/moebench experiments/moesys/run.sh   (default: build/release/cli/moebench)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mb="${MOEBENCH:-$root/build/release/cli/moebench}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# PREDICTED first (`moebench simulate` on sample_configs/clusters/moesys.toml), then the headline
# table (experiments/headlines.py):
#   Fig. 10: AlltoAll (expert_centric, DeepSpeed-MoE's expert parallelism) against Hierarchical
#     AlltoAll (hier_a2a) on 32 GPUs, the communication stage and the step (gpt_moe_52b.toml:
#     Table II's 52.6B stands in for Fig. 10's undescribed 80.7B);
#   Table IV: the embedding partition's speed gain on 8 GPUs, 9 models (gpt_moe_table4.toml);
#   Table III: elastic training's speed per GPU, load imbalanced on 4 GPUs against the elastic
#     4/2/1/1 on 8 (ufo_table3.toml; UFO's shape assumed; run_elastic.sh checks the assignment);
#   Table II: MoESys (hier_a2a + the embedding partition) against DeepSpeed-MoE's expert
#     parallelism on its five GPT-MoE rows (8-128 GPUs; sequence 1024 assumed);
#   not attempted: Table V (its GPUs, nodes and sequence are not given).
: > "$work/headlines"
fig10() {
  # The communication stage: each rank's MoE AlltoAll tasks (dispatch and combine, forward and
  # backward, both phases of the hierarchical one), summed per step, mean over ranks and steps.
  "$mb" simulate "$here/gpt_moe_52b.toml" --set strategy.name=\"$1\" --db "$work/sim.db" --json > "$work/s.json"
  python3 - "$work/s.json" "$work/sim.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[2])
run = db.execute("select max(id) from runs").fetchone()[0]
rows = db.execute("select sum(duration) from spans where run = ? and category = 'comm' and "
                  "(name like 'moe.dispatch%' or name like 'moe.combine%') group by rank, step", (run,)).fetchall()
print(json.load(open(sys.argv[1]))["mean_step_ms"], 1000 * sum(r[0] for r in rows) / len(rows))
PY
}
read -r a2a_ms a2a_comm <<< "$(fig10 expert_centric)"
read -r hier_ms hier_comm <<< "$(fig10 hier_a2a)"
echo "== Fig. 10, PREDICTED: 52.6B GPT-MoE on 32 A100 (4 x 8), ms/step and the AlltoAll stage (mean per rank)"
printf "  AlltoAll (expert_centric)      %8.1f ms/step, communication %7.1f ms\n" "$a2a_ms" "$a2a_comm"
printf "  Hierarchical AlltoAll (hier)   %8.1f ms/step, communication %7.1f ms\n" "$hier_ms" "$hier_comm"
python3 - "$a2a_ms" "$a2a_comm" "$hier_ms" "$hier_comm" >> "$work/headlines" <<'PY'
import sys
a, ac, h, hc = map(float, sys.argv[1:])
print(f"Fig. 10 hierarchical AlltoAll: communication gain, %\t15.5\t{100 * (ac / hc - 1):.2f}\t0")
print(f"Fig. 10 hierarchical AlltoAll: end-to-end gain, %\t10.3\t{100 * (a / h - 1):.2f}\t0")
PY
echo
echo "== Table IV, PREDICTED: the embedding partition on 8 A100 (batch 8), ms/step baseline -> partitioned"
for row in "4 2048 289452 300451" "4 4096 152144 167352" "4 8192 80421 91687" \
           "8 2048 144159 150161" "8 4096 86237 95890" "8 8192 40605 46938" \
           "16 2048 53428 55725" "16 4096 26321 29047" "16 8192 12065 13902"; do
  read -r experts hidden base part <<< "$row"
  t4() {
    # 4 experts on 8 GPUs: EP groups of 4, each expert on 2 GPUs (its gradients all-reduced).
    "$mb" simulate "$here/gpt_moe_table4.toml" --set moe.experts="$experts" --set parallel.ep=$((experts < 8 ? experts : 8)) \
      --set model.hidden="$hidden" \
      --set model.heads=$((hidden / 64)) --set model.embedding_partition="$1" --db "$work/sim.db" --json > "$work/s.json"
    python3 -c "import json; print(json.load(open('$work/s.json'))['mean_step_ms'])"
  }
  b=$(t4 false)
  p=$(t4 true)
  printf "  %2s experts, hidden %4s: %8.2f -> %8.2f ms/step\n" "$experts" "$hidden" "$b" "$p"
  python3 -c "print(f'Table IV {$experts} experts, hidden {$hidden}: partition gain, %\t{100 * ($part / $base - 1):.2f}\t{100 * ($b / $p - 1):.2f}\t0')" \
    >> "$work/headlines"
done
echo
echo "== Table III, PREDICTED: four tasks (512/256/128/128), ms/step and samples/s per GPU (ufo_table3.toml, model assumed)"
t3() {
  "$mb" simulate "$here/ufo_table3.toml" "$@" --db "$work/sim.db" --json > "$work/s.json"
  python3 -c "import json; print(json.load(open('$work/s.json'))['mean_step_ms'])"
}
imb=$(t3)
bal=$(t3 --set run.ranks=8 --set cluster.devices_per_node=8 --set 'data.rank_tasks=["0","0","0","0","1","1","2","3"]')
python3 - "$imb" "$bal" >> "$work/headlines" <<'PY'
import sys
imb, bal = map(float, sys.argv[1:])
a, b = 1024 / imb * 1e3 / 4, 1024 / bal * 1e3 / 8
print(f"  load imbalanced, 4 GPUs (1/1/1/1): {imb:7.1f} ms/step, {a:7.1f} samples/s per GPU (paper 62.6)", file=sys.stderr)
print(f"  load balanced,   8 GPUs (4/2/1/1): {bal:7.1f} ms/step, {b:7.1f} samples/s per GPU (paper 74.0)", file=sys.stderr)
print(f"Table III elastic: samples/s per GPU gain, %\t18.2\t{100 * (b / a - 1):.2f}\t0")
PY
echo
echo "== Table II, PREDICTED: GPT-MoE (hidden 4096, 12 layers, one expert and one sequence per GPU, untied head),"
echo "   DeepSpeed-MoE's expert parallelism (expert_centric) against MoESys (hier_a2a + embedding partition), tokens/s"
for row in "13.9 8 24165 31085" "26.8 16 43691 59136" "52.6 32 82957 113456" "104.1 64 157728 209970" \
           "207.2 128 283706 376968"; do
  read -r params gpus ds_paper ms_paper <<< "$row"
  t2() {  # strategy embedding_partition
    "$mb" simulate "$here/gpt_moe_52b.toml" --nodes $((gpus / 8)) --set run.ranks="$gpus" --set moe.experts="$gpus" \
      --set train.batch_size="$gpus" --set model.tied_head=false --set strategy.name=\"$1\" \
      --set model.embedding_partition="$2" --db "$work/sim.db" --json > "$work/s.json"
    python3 -c "import json; print(json.load(open('$work/s.json'))['tokens_per_s'])"
  }
  ds=$(t2 expert_centric false)
  ms=$(t2 hier_a2a true)
  python3 - "$params" "$gpus" "$ds_paper" "$ms_paper" "$ds" "$ms" >> "$work/headlines" <<'PY'
import sys
params, gpus = sys.argv[1], int(sys.argv[2])
dp, mp, d, m = map(float, sys.argv[3:])
print(f"  {params:>6s}B {gpus:4d} GPUs  DeepSpeed {d:9.0f} (paper {dp:7.0f})  MoESys {m:9.0f} (paper {mp:7.0f})", file=sys.stderr)
print(f"Table II {params}B, {gpus} GPUs: MoESys over DeepSpeed, %\t{100 * (mp / dp - 1):.1f}\t{100 * (m / d - 1):.2f}\t0")
print(f"Table II {params}B, {gpus} GPUs: MoESys tokens/s\t{mp:.0f}\t{m:.0f}\t0")
PY
done
cat >> "$work/headlines" <<'ROWS'
Table V elastic training: speed per GPU gain, %	15.0	-	0
Table V resource-aware communication: gain, %	10.0	-	0
Table V embedding partition: gain, %	1.4	-	0
ROWS
echo
headline_status=0
python3 "$root/experiments/headlines.py" "MoESys headlines (predicted)" < "$work/headlines" || headline_status=1
echo

"$mb" run "$here/ring_model.toml" --set run.out_dir="$work" > "$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
prompt="$(python3 -c "print(' '.join(str((7 * i + 3) % 256) for i in range(40)))")"
infer() {  # name, extra flags
  local name=$1
  shift
  "$mb" infer "$work/moesys_ring" --prompt "$prompt" --tokens 24 --json "$@" > "$work/$name.json"
}
for repeat in 1 2 3; do  # the fastest of 3 of each (a shared 2-core machine)
  infer "resident$repeat"
  infer "overlapped$repeat" --ring 2
  infer "original$repeat" --ring 2 --no-prefetch
done
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
runs = {k: [json.load(open(f"{w}/{k}{r}.json")) for r in (1, 2, 3)] for k in ("resident", "overlapped", "original")}
best = {k: min(v, key=lambda j: j["seconds"]) for k, v in runs.items()}
ms = {k: best[k]["seconds"] * 1e3 for k in best}
movement = min(j["ring"]["load_s"] for j in runs["original"]) * 1e3
ring = best["overlapped"]["ring"]
print("== Fig. 12, MEASURED on this machine: 24 tokens, greedy, ring of 2 of 4 MoE blocks' experts (fastest of 3)")
print(f"{'':28s} {'ours ms':>9s} {'paper ms':>9s}")
for label, ours, paper in [("computation (resident)", ms["resident"], 433), ("expert movement", movement, 414),
                           ("overlapped offloading", ms["overlapped"], 447), ("original offloading", ms["original"], 851)]:
    print(f"{label:28s} {ours:9.1f} {paper:9d}")
o = best["overlapped"]["ring"]
print(f"overlapped: forward waited {o['exposed_s'] * 1e3:.1f} ms for its {o['load_s'] * 1e3:.1f} ms of loads, and took "
      f"{ms['overlapped'] - ms['resident']:.1f} ms more than resident (paper: {447 - 433} ms); original: "
      f"{ms['original'] / ms['overlapped']:.2f}x the overlapped time (paper: {851 / 447:.2f}x)")
saved = 1 - ring["device_bytes"] / ring["resident_bytes"]
print(f"device tier: {ring['device_bytes'] / 2**20:.1f} MiB instead of {ring['resident_bytes'] / 2**20:.1f} MiB "
      f"({100 * saved:.0f} % less; paper: at least 30 %)")
same = all(j["tokens"] == runs["resident"][0]["tokens"] for v in runs.values() for j in v)
fail = not same or saved <= 0
print(f"{'holds' if same else 'DOES NOT HOLD'}: the ring's tokens equal the resident model's")
if fail:
    print("RESULT: ring memory changed the output or saved no device memory")
    sys.exit(1)
print("RESULT: ring memory gives the resident model's tokens with a smaller device tier (measured)")
PY
exit "$headline_status"

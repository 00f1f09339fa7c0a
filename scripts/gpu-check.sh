#!/usr/bin/env bash
# The device check: every GPU suite and the NCCL communicator on a GPU machine that has CUDA 13
# but none of moebench's Debian libraries (no Open MPI either).
#
#   here:  scripts/gpu-check.sh pack   builds build/release (CUDA + NCCL) and writes .gpu/bundle.tar.xz:
#                                      ../shared/tools/gpu-bundle's CLI, GPU suites and libraries,
#                                      plus Open MPI's launcher (orterun), its plugins, their
#                                      libraries and help files, relocated through OPAL_* variables
#   there: scripts/gpu-check.sh run    unpacks it to /tmp/mb and runs, logging to $OUT (or /tmp/mb/out):
#            nvidia-smi; tst_kernel_launch, tst_kernels_dense, tst_kernels_moe, tst_kernels_moe_block,
#            tst_kernels_embeddings, tst_stream_executor_cuda, tst_model_cuda, tst_train_cuda;
#            mpirun -np 2 tst_comm_nccl (2 ranks share the GPU: dist/device_sharing.h);
#            mpirun -np 2 and -np 4 tst_dist_train_cuda (data, tensor and pipeline parallelism,
#            ZeRO-3, the partitioned embedding, and expert parallelism with expert_centric,
#            hier_a2a, fastermoe, ppmoe, monta, data_centric and janus over NCCL and CUDA IPC vs one
#            GPU; bf16 with ZeRO-3 and with expert_centric);
#            mpirun -np 4 tst_comm_mpi as Open MPI chooses and with --mca osc sm,ucx;
#            moebench run (2 ranks: expert_centric; data_centric as Open MPI picks its one-sided
#            component and with osc sm,ucx; data_centric on cuda); bench comm --ranks 2;
#            bench moe-layer --device cuda; bench overlap on 2 GPU ranks;
#            the quickstart on one rank on the CPU and on cuda (fp32 and bf16), and on 2 ranks on
#            cuda with parallel.ep = 1 and with parallel.ep = 0 + expert_centric (validation losses
#            within 0.03 of the CPU's);
#            10 steps of the 1B model on cuda in bf16 (its tokens/s and MFU)
# With the device tool: carry .gpu, command `bash scripts/gpu-check.sh run`. Prints a summary
# table last; exit 0 only when every step passed. `run REGEX` runs only the steps whose name
# matches (grep -E), to split the check over calls of a limited length; the quickstart's loss
# comparison needs its quickstart steps in the same call.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}

pack() {
  set -e
  scripts/build.sh release
  mkdir -p .gpu
  local exclude
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
  local s
  s=$(mktemp -d)
  ../shared/tools/gpu-bundle build/release "$s/base.tar.xz" tests/tst_comm_mpi tests/tst_stream_executor_cuda tests/tst_model_cuda tests/tst_train_cuda \
    tests/tst_dist_train_cuda tests/tst_kernels_embeddings >/dev/null
  mkdir -p "$s/b" && tar -C "$s/b" -xJf "$s/base.tar.xz"
  # Open MPI's launcher and what it loads at run time (Debian 12 paths; ompi_info --path all).
  cp -L /usr/bin/orterun "$s/b/bin/"
  ln -s orterun "$s/b/bin/mpirun"  # what `moebench run` starts
  mkdir -p "$s/b/ompi/lib" "$s/b/ompi/share" "$s/b/ompi/etc" "$s/b/pmix"
  cp -a /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 "$s/b/ompi/lib/"
  cp -a /usr/share/openmpi "$s/b/ompi/share/"
  cp -a /etc/openmpi/. "$s/b/ompi/etc/"
  [ -d /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix ] && cp -a /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix "$s/b/pmix/lib"
  [ -d /usr/share/pmix ] && cp -a /usr/share/pmix "$s/b/pmix/share"
  rm -rf "$s/b/openmpi"  # gpu-bundle's copy of the plugins: ompi/lib/openmpi3 replaces it
  local skip='linux-vdso|ld-linux|/libc\.so|/libm\.so|/libpthread|/libdl\.so|/librt\.so|libcuda\.so|libcudart|libcublas|libnccl|libstdc\+\+|libgcc_s'
  { ldd "$s/b/bin/orterun"; find "$s/b/ompi/lib" "$s/b/pmix" -name '*.so' -exec ldd {} \; 2>/dev/null; } |
    awk '/=> \//{print $3}' | sort -u | grep -Ev "$skip" | while read -r l; do
      [ -e "$s/b/lib/$(basename "$l")" ] || cp -L "$l" "$s/b/lib/"
    done
  tar -C "$s/b" -cJf .gpu/bundle.tar.xz .
  rm -rf "$s"
  ls -la .gpu/bundle.tar.xz
}

run() {
  local only=${1:-} D=/tmp/mb O=${OUT:-/tmp/mb/out}
  rm -rf "$D" && mkdir -p "$D" "$O"
  tar -C "$D" -xJf .gpu/bundle.tar.xz || { echo "gpu-check: no .gpu/bundle.tar.xz (carry .gpu)"; exit 2; }
  local cuda_dirs="" l
  for l in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    cuda_dirs+="$(dirname "$(find / -xdev -name "$l" -not -path '*/.debug/*' 2>/dev/null | head -1)"):"
  done
  export LD_LIBRARY_PATH="$D/lib:$cuda_dirs${LD_LIBRARY_PATH:-}" PATH="$D/bin:$PATH"
  export OPAL_PREFIX="$D" OPAL_BINDIR="$D/bin" OPAL_LIBDIR="$D/lib" OPAL_PKGLIBDIR="$D/ompi/lib/openmpi3"
  export OPAL_DATADIR="$D/ompi/share" OPAL_PKGDATADIR="$D/ompi/share/openmpi" OPAL_SYSCONFDIR="$D/ompi/etc"
  export PMIX_MCA_mca_base_component_path="$D/pmix/lib" PMIX_INSTALL_PREFIX="$D/pmix"
  export OMPI_MCA_mca_base_component_path="$D/ompi/lib/openmpi3"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  local results=() rc_all=0
  step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2 rc
    shift 2
    if [ -n "$only" ] && ! grep -Eq "$only" <<<"$name"; then return 0; fi
    echo "=== $name: $*" | tee -a "$O/gpu-check.log"
    timeout "$limit" "$@" >"$O/$name.log" 2>&1
    rc=$?
    tail -n 25 "$O/$name.log"
    results+=("$(printf '%-22s rc=%-3s %s' "$name" "$rc" "$(grep -E 'Totals:|passed|PASS|FAIL|^done:|of the measured' "$O/$name.log" | tail -1)")")
    [ "$rc" -eq 0 ] || rc_all=1
  }
  step nvidia-smi 30 nvidia-smi
  for t in tst_kernel_launch tst_kernels_dense tst_kernels_moe tst_kernels_moe_block tst_kernels_embeddings \
    tst_stream_executor_cuda tst_model_cuda tst_train_cuda; do
    step "$t" 300 "$D/bin/$t"
  done
  step tst_comm_nccl 240 orterun --bind-to none -np 2 "$D/bin/tst_comm_nccl"
  step tst_dist_train_cuda_np2 360 orterun --bind-to none -np 2 "$D/bin/tst_dist_train_cuda"
  step tst_dist_train_cuda_np4 360 orterun --bind-to none -np 4 "$D/bin/tst_dist_train_cuda"
  # One-sided windows on this machine's transport, as Open MPI picks it and with osc/ucx
  # (what moebench's message recommends when osc/rdma cannot serve them; docs/limits.md).
  step tst_comm_mpi 240 orterun --bind-to none -np 4 "$D/bin/tst_comm_mpi"
  step tst_comm_mpi_ucx 240 orterun --bind-to none --mca osc sm,ucx -np 4 "$D/bin/tst_comm_mpi"
  step tst_comm_mpi_ucx_tcp 240 orterun --bind-to none --mca osc sm,ucx -x UCX_TLS=self,tcp -np 4 "$D/bin/tst_comm_mpi"
  # Whole runs on this machine's MPI: a strategy that needs no window, and one that pulls (as
  # Open MPI picks its one-sided component, then with the setting moebench's message names).
  local tiny=(run tests/data/tiny.toml --ranks 2 --set cluster.nodes=1 --set cluster.devices_per_node=0
              --set train.steps=4 --set train.eval_every=0 --set store.enabled=false)
  step run_expert_centric 120 moebench "${tiny[@]}" --out "$D/runs/ec"
  step run_data_centric 120 moebench "${tiny[@]}" --set strategy.name=data_centric --out "$D/runs/dc"
  step run_data_centric_ucx 120 env OMPI_MCA_osc=sm,ucx UCX_TLS=self,tcp \
    moebench "${tiny[@]}" --set strategy.name=data_centric --out "$D/runs/dcu"
  # data_centric on two GPU ranks: the experts pulled through CUDA IPC windows (node cache on)
  step run_data_centric_cuda 120 moebench "${tiny[@]}" --set run.device=cuda --set strategy.name=data_centric \
    --set strategy.data_centric.hierarchical=true --set cluster.nodes=2 --set cluster.devices_per_node=1 \
    --out "$D/runs/dc_cuda"
  step bench_comm 120 moebench bench comm --ranks 2 --op alltoall -b 1K -e 16M -f 4 -n 5 -w 2
  step bench_moe_layer 240 moebench bench moe-layer --device cuda
  # Issue 33's shapes, bf16 T=16384 H=4096 A=4: E=8 K=2 (target <= 45 ms and >= 75 % of the measured
  # GEMM rate) with the measured choice and with each path forced, E=64 K=8 (<= 165 ms); fp32 E=8 K=2
  # (>= 75 % of the fp32 rate); the fine-grained T=4096 H=1024 E=64 K=8. Each prints its "expert GEMMs" line.
  local big=(bench moe-layer --device cuda --tokens 16384 --hidden 4096 --ffn-mult 4 --iters 5)
  step moe_e8k2_bf16 300 moebench "${big[@]}" --experts 8 --top-k 2 --precision bf16 --profile
  step moe_e8k2_bf16_grouped 300 moebench "${big[@]}" --experts 8 --top-k 2 --precision bf16 --expert-gemms grouped
  step moe_e8k2_bf16_per_expert 300 moebench "${big[@]}" --experts 8 --top-k 2 --precision bf16 \
    --expert-gemms per_expert
  step moe_e64k8_bf16 420 moebench "${big[@]}" --experts 64 --top-k 8 --precision bf16
  step moe_e8k2_fp32 300 moebench "${big[@]}" --experts 8 --top-k 2
  step moe_fine_bf16 180 moebench bench moe-layer --device cuda --tokens 4096 --hidden 1024 --ffn-mult 4 \
    --experts 64 --top-k 8 --precision bf16
  # Achieved overlap on 2 GPU ranks (issue 32's target: >= 0.9 of the bound for expert_centric D=4
  # and fastermoe's smart schedule): the of_bound column
  step bench_overlap_cuda 240 moebench bench overlap sample_configs/quickstart.toml --ranks 2 --set run.device=cuda \
    --set cluster.nodes=1 --set cluster.devices_per_node=0 -n 5 -w 2
  # The quickstart on one rank, on the CPU and on the GPU (fp32, bf16): the GPU's validation
  # losses within 0.03 of the CPU's (issue 32's bound for bf16; fp32 agrees far closer).
  local qs=(run sample_configs/quickstart.toml --ranks 1 --set cluster.nodes=1 --set cluster.devices_per_node=0
            --set store.enabled=false)
  step quickstart_cpu 300 moebench "${qs[@]}" --out "$D/runs/qs_cpu"
  step quickstart_cuda 300 moebench "${qs[@]}" --set run.device=cuda --out "$D/runs/qs_cuda"
  step quickstart_cuda_bf16 300 moebench "${qs[@]}" --set run.device=cuda --set run.precision=bf16 \
    --out "$D/runs/qs_cuda_bf16"
  step quickstart_cuda_2ranks 300 moebench run sample_configs/quickstart.toml --ranks 2 --set cluster.nodes=1 \
    --set cluster.devices_per_node=0 --set store.enabled=false --set run.device=cuda --set parallel.ep=1 \
    --out "$D/runs/qs_cuda2"
  step quickstart_cuda_2ranks_ep 300 moebench run sample_configs/quickstart.toml --ranks 2 --set cluster.nodes=1 \
    --set cluster.devices_per_node=0 --set store.enabled=false --set run.device=cuda --set parallel.ep=0 \
    --set strategy.name=expert_centric --out "$D/runs/qs_cuda2_ep"
  step quickstart_val_loss 10 python3 - "$O/quickstart_cpu.log" "$O/quickstart_cuda.log" "$O/quickstart_cuda_bf16.log" \
    "$O/quickstart_cuda_2ranks.log" "$O/quickstart_cuda_2ranks_ep.log" <<'PY'
import re, sys
loss = [float(re.findall(r"done: .* val loss ([0-9.]+)", open(f).read())[-1]) for f in sys.argv[1:]]
ok = all(abs(l - loss[0]) <= 0.03 for l in loss[1:])
print(f"val loss cpu {loss[0]:.4f} cuda {loss[1]:.4f} cuda bf16 {loss[2]:.4f} cuda 2 ranks {loss[3]:.4f} "
      f"cuda 2 ranks expert-parallel {loss[4]:.4f}: {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
  # The 1B model of sample_configs/models on the GPU in bf16 (its file's precision), 10 steps:
  # its "done:" line (tokens/s, MFU) is the figure.
  step moe_gpt_1b_bf16 300 moebench run sample_configs/models/moe_gpt_1b.toml \
    --set train.steps=10 --set store.enabled=false --out "$D/runs/1b"
  printf '%s\n' "--- summary" "${results[@]}" | tee -a "$O/gpu-check.log"
  return $rc_all
}

case "$mode" in
  pack) pack ;;
  run) run "${2:-}" ;;
  *) echo "usage: scripts/gpu-check.sh pack | run [REGEX]" >&2; exit 2 ;;
esac

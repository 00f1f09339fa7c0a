#pragma once
// The resolved configuration of a run: plain structs with the defaults every key has.
// config_loader.h fills them from TOML (+ --set overrides) and validates them; the meaning of
// each key is documented in docs/configuration.md (`moebench validate --doc`).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "moebench/config/config_choices.h"
#include "moebench/moe/synthetic_routing.h"

namespace moebench {

// The most BLAS/OpenMP threads one process may start (run.threads, --threads of calibrate and
// the benches): above the hardware threads of the largest machines (2 x 192-core EPYC = 768),
// far below a thread storm (100,000 threads took minutes to start; docs/limits.md).
inline constexpr int kMaxThreads = 1024;

struct RunConfig {
  std::string name = "run";   // human-readable run name
  uint64_t seed = 1234;       // seeds init, synthetic data and batch sampling
  std::string out_dir = "runs";  // checkpoints and outputs go to <out_dir>/<name>/
  int threads = 0;            // BLAS/OpenMP threads; 0 = all cores
  Device device = Device::cpu;            // cpu (BLAS, threads) | cuda (one GPU per rank, kernels/)
  Precision precision = Precision::fp32;  // fp32 | bf16 (bf16 compute, fp32 master weights; cuda only)
  int ranks = 1;              // local ranks `moebench run` starts through mpirun (outside MPI);
                              // under mpirun / srun the launched world size
  bool oversubscribe_ok = false;  // local launches: allow more than 8 ranks per core or more
                                  // rank memory than the machine has available
  float stop_grace_s = 8.0f;  // local launches: after a stop signal, ranks that have not ended
                              // (finished their step, checkpointed) within this time are killed
};

struct ClusterConfig {
  // A cluster description (sample_configs/clusters/*.toml): its [cluster] keys apply where the
  // config sets none. Relative: to the config file's folder (--set: the current directory).
  std::string file;
  std::string name = "local";  // the cluster's name (messages, describe())
  int nodes = 1;              // nodes of the (virtual on one machine) topology
  int devices_per_node = 0;   // ranks per node; 0 = world size / nodes
  // PCIe switches: local indices of the ranks sharing one switch, listed pairwise
  // ([0, 1, 2, 3] = switches {0,1} and {2,3}); empty = none described
  std::vector<int> pcie_switch_pairs;
  // Links and devices (perf/cluster_model.h). Bandwidths in GB/s = 1e9 bytes/s per direction,
  // latencies in microseconds. Defaults: this development machine, roughly (experiments/).
  double device_tflops = 0.12;           // sustained compute rate per device, TFLOP/s
  // The precision the workload described on this cluster trains in, for predictions (simulate,
  // plan, the strategies' cost models): fp16 / bf16 put 2 bytes per activation, gradient and
  // weight element on the wire, fp32 4. `runtime`: what moebench's runtime sends (fp32 arrays in
  // both run.precisions). Executed graphs always carry the bytes they really send.
  TrainPrecision train_precision = TrainPrecision::runtime;
  double device_memory_gib = 0.0;        // memory per device, GiB (2^30 bytes); 0 = not described
  // MoESys eq. 1 (perf/moesys_storage.h): host memory (its M_CPU) and SSD space (M_SSD) per
  // device, GiB; 0 = not described.
  double host_memory_gib = 0.0;
  double ssd_gib = 0.0;
  std::vector<double> efficiency_flops;  // efficiency curve: FLOPs per task, ascending ...
  std::vector<double> efficiency;        // ... and the fraction of device_tflops reached there
  double copy_bw_gbs = 10.0;             // host <-> device copies, per PCIe switch uplink
  double intra_bw_gbs = 10.0;            // device <-> device in one node (NVLink / NVSwitch / shm)
  double intra_latency_us = 1.0;
  double pcie_bw_gbs = 0.0;              // devices behind one PCIe switch; 0 = the intra link
  double pcie_latency_us = 0.0;
  double inter_bw_gbs = 10.0;            // per NIC, between nodes
  double inter_latency_us = 2.0;
  int devices_per_nic = 0;               // devices sharing one NIC; 0 = all of a node
  int nodes_per_switch = 0;              // nodes under one leaf switch; 0 = all nodes
  double spine_bw_gbs = 0.0;             // between leaf switches, per NIC; 0 = the inter link
  double spine_latency_us = 0.0;
  // Measured collective rates (`moebench bench comm`, busbw: nccl-tests' bus bandwidth) by the
  // bytes of one operation (alltoall: one rank's send buffer; allgather: the receive buffer),
  // ascending; [] = none measured. MoNTA's efficiencies r1, r2 are busbw / the link's bandwidth.
  std::vector<double> alltoall_busbw_bytes;
  std::vector<double> alltoall_busbw_gbs;
  std::vector<double> allgather_busbw_bytes;
  std::vector<double> allgather_busbw_gbs;
  double d2d_bw_gbs = 0.0;  // device-memory copies (MoNTA's B3 x r3; simulated row packing), GB/s; 0 = copy_bw_gbs
  // Measured rate of a link class by message size (a port's throughput when its messages are
  // that large: point-to-point sweeps, or an all-to-all's busbw at per-peer size = buffer /
  // ranks): bytes of one message, ascending, and GB/s there; [] = the link's bandwidth at any size.
  std::vector<double> intra_msg_bytes;
  std::vector<double> intra_msg_gbs;
  std::vector<double> inter_msg_bytes;
  std::vector<double> inter_msg_gbs;
  // File reads and writes of MoESys's SSD tier (io tasks, storage/expert_state_tier.h), GB/s per
  // device; 0 = copy_bw_gbs.
  double ssd_bw_gbs = 0.0;
  // This host's own costs beyond the model (`moebench calibrate` fits them on reference runs,
  // perf/calibration.h): what a comm task takes beyond its transfers, and a compute task of a
  // listed name taking task_overhead_us + task_factors x the compute model's time.
  double comm_overhead_us = 0.0;
  double comm_us_per_mb = 0.0;  // and per MB (1e6 bytes) the task sends
  std::vector<std::string> task_names;
  std::vector<double> task_overhead_us;
  std::vector<double> task_factors;
};

// The world is laid out as pp x dp x tp ranks, Megatron's order (tensor-parallel ranks
// adjacent, pipeline stages outermost): rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank
// (dist/parallel_layout.h). Expert parallelism is carved out of the data-parallel group, or for
// a strategy that places experts in the tensor-parallel group (ExpertGroups, config/strategy_spec.h;
// Pipeline MoE §3.3) is that group itself.
struct ParallelConfig {
  int tp = 1;                 // tensor-parallel group size (Megatron: heads and FFN columns split)
  bool vocab_parallel = false;  // with tp > 1: embedding and LM head split by vocabulary rows too
  int pp = 1;                 // pipeline stages (blocks split into pp consecutive ranges)
  int dp = 0;                 // data-parallel size; 0 = run.ranks / (tp x pp)
  int ep = 0;                 // expert-parallel group size; 0 = the whole data-parallel group
  int microbatches = 1;       // per step and DP rank: global batch = dp x microbatches x micro-batch
  PipeSchedule schedule = PipeSchedule::one_f_one_b;  // pipeline schedule: 1f1b (PipeDream-flush) | gpipe
  std::vector<int> stage_layers;  // blocks per stage; [] = even (the first stages take the remainder)
};

// One strategy option's value; the member its kind names holds it (config/strategy_spec.h).
struct OptionValue {
  int i = 0;
  float f = 0;
  double d = 0;
  bool b = false;
  std::string s;                     // string, or "auto" / a number as text
  std::vector<std::string> strings;  // string list
  bool operator==(const OptionValue&) const = default;
};

// The MoE exchange strategy and the options of [strategy.<section>]. The sections and their
// keys are declared by the strategies (strategies/strategy_descriptor.h, registered in
// config/strategy_spec.h): config/ sits below strategies/ and holds the values generically;
// each strategy reads its typed options from them when it is made.
struct StrategyConfig {
  StrategyConfig();      // name: the default strategy, the first registered (strategies/registry.cpp)
  std::string name;      // a registered strategy (config/strategy_spec.h)
  // Values set, by "<section>.<key>" ("data_centric.credits"); a key not here has its default.
  std::map<std::string, OptionValue> options;

  // The value of a declared key; throws std::invalid_argument naming an undeclared one.
  const OptionValue& option(const std::string& key) const;
  // The same to change, stored (from its default) on first use.
  OptionValue& option(const std::string& key);
};

struct ModelConfig {
  int vocab_size = 256;
  int seq_len = 64;           // context length T (also the position-embedding size)
  int hidden = 128;           // C
  int layers = 4;             // transformer blocks
  int heads = 4;              // attention heads; must divide hidden
  int ffn_mult = 4;           // dense FFN and expert FFN width = ffn_mult * hidden
  bool tied_head = true;      // LM head shares the token embedding
  // MoESys §IV-C: embed.wte split by columns over the data-parallel group (model/embedding_partition.h)
  bool embedding_partition = false;
  float init_std = 0.02f;
};

struct MoeConfig {
  std::vector<int> moe_layers;    // block indices (0-based) whose FFN is an MoE block
  std::vector<int> experts;       // experts per MoE block; one entry per moe_layers entry
  int top_k = 2;
  float capacity_factor = 0.0f;   // 0 = dropless; else capacity = ceil(cf * tokens * k / E)
  float aux_loss_weight = 0.01f;  // weight of the GShard load-balancing loss
  bool gate_normalize = true;     // renormalise the top-k gate weights to sum to 1
  bool expert_tp = false;         // slice every expert's FFN over the TP group (DeepSpeed-TED)
  // Expert choice: "learned" (the router's top-k) or a synthetic override for reproducible
  // imbalance: "uniform", "zipf:S", "hot:E,F" (expert E gets a fraction F), "rotating", "balanced".
  RoutingSpec routing;
};

struct DataConfig {
  DataSource source = DataSource::synthetic;  // synthetic | bin | text
  std::string path;                  // bin: train shard; text: a text file
  std::string val_path;              // bin: optional held-out shard
  float val_fraction = 0.1f;         // held-out tail when no val_path is given
  // synthetic corpus: a mixture of Markov-chain "languages" over the vocabulary
  int languages = 4;
  int64_t corpus_tokens = 200000;
  int branching = 4;                 // likely successors per state in each language
  // Multi-task data (MoESys §IV-A, elastic training; dist/task_assignment.h): per-task batch
  // sizes in sequences (task t = synthetic language t), summing to train.batch_size; [] = one task.
  std::vector<int> tasks;
  // Per data-parallel rank, the tasks it trains: "0", or "2+3" (merged light tasks); a task on
  // k ranks splits its batch over them. [] = the elastic proposal (dist/elastic_plan.h).
  std::vector<std::string> rank_tasks;
};

struct TrainConfig {
  int steps = 200;
  int batch_size = 8;
  float lr = 3e-3f;
  float min_lr_ratio = 0.1f;   // cosine decays to lr * min_lr_ratio
  int warmup_steps = 20;
  float weight_decay = 0.1f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float grad_clip = 1.0f;      // global grad-norm clip; 0 = off
  int eval_every = 50;         // eval loss on the held-out split every N steps (0 = only at end)
  int eval_batches = 4;
  int checkpoint_every = 0;    // 0 = only at the end
  bool allow_nonfinite = false;  // false: a NaN or infinite loss stops the run (FAILED)
};

struct StoreConfig {
  bool enabled = true;             // record the run in the SQLite run store
  std::string db = "runs.db";      // database file (relative: to the current directory)
  std::string experiment = "default";
  int spans_every = 1;             // record spans every k-th step (metrics/traffic/routing: every step)
};

// Where the experts' training states live (MoESys §III-B1, hierarchical storage). A state record
// is one expert's fp32 master weights + Adam m + v: 3 x expert_param_count floats
// (storage/expert_state_store.h holds them on SSD, storage/sparse_state_cache.h caches them in host
// memory per Algorithm 2).
struct StorageConfig {
  SparseStorage sparse = SparseStorage::memory;  // memory: states stay in host memory; ssd: files under ssd_dir, LFU host cache
  std::string ssd_dir;            // folder of the state files (sparse = "ssd"); relative: to the config file's folder
  int64_t host_cache_bytes = 0;   // host cache budget, bytes; 0 = unlimited
  int64_t device_bytes = 0;       // device budget for sparse states, bytes; 0 = unlimited
  // Algorithm 2 (storage/expert_state_tier.h, sparse_state_cache.h): record loads and write-backs
  // run ahead of the updates (false: the no-overlap baseline), the hit threshold, decay beta
  // every decay_every requests (0 = never).
  bool sparse_prefetch = true;
  double hit_threshold = 0.0;
  double decay = 0.5;
  int decay_every = 0;
  // Dense (non-expert) parameters (MoESys §III-B2, Algorithm 1; storage/dense_shards.h):
  // "replicated": every DP rank holds the whole fp32 weights and AdamW m, v (gradients all-reduced);
  // "zero3": each DP rank owns 1/N of every dense tensor's weights and m, v (gradients
  // reduce-scattered, weights all-gathered per layer before use). Needs tp = pp = 1, > 1 DP rank.
  DenseStorage dense = DenseStorage::replicated;
  // zero3 only: gather layer i+1's weights on the comm stream while layer i computes (true) or
  // each layer on demand, blocking (false: the ablation baseline).
  bool dense_prefetch = true;
  // zero3 only: the experts sharded too, each MoE block's experts in its dense part (gathered
  // before the block's forward, reduce-scattered when its backward ends): DeepSpeed's ZeRO-3
  // over a single-worker MoE, FasterMoE's Fig. 10 baseline. Needs parallel.ep = 1 (every rank
  // holds every expert, replicated over DP) and the expert_centric or fastermoe strategy.
  bool zero3_experts = false;
};

// Parameters of one expert of `model`: w1 [F,H], b1 [F], w2 [H,F], b2 [H] with F = ffn_mult x H
// (model/param_count.h counts the same pieces, sliced per rank; config validation needs the
// whole expert and cannot include model/).
int64_t expert_param_count(const ModelConfig& model);
// Bytes of one expert's state record: 3 x expert_param_count x 4 (fp32 master, Adam m, v).
int64_t expert_state_record_bytes(const ModelConfig& model);

// The link emulator (perf/link_emulator.h, docs/simulator-emulator.md): every message of a
// real run is paced over the links of a cluster file. The section absent (cluster "") = off.
struct EmulateConfig {
  // A cluster file (sample_configs/clusters/*.toml) naming every link its devices use; its
  // devices are the run's ranks. Relative: to the config file's folder (--set: the current directory).
  std::string cluster;
  // "auto" = the cluster's device rate / this machine's measured GEMM rate per rank, or a
  // number > 0 (as text: "50"): the cluster's time stretched by this factor.
  std::string time_scale = "auto";
};

struct Config {
  std::string source_file;     // the TOML file it came from (for messages)
  RunConfig run;
  ClusterConfig cluster;
  ModelConfig model;
  ParallelConfig parallel;
  MoeConfig moe;
  StrategyConfig strategy;
  DataConfig data;
  TrainConfig train;
  StoreConfig store;
  EmulateConfig emulate;
  StorageConfig storage;

  bool is_moe_block(int block) const;
  int experts_in_block(int block) const;  // 0 for a dense block
};

}  // namespace moebench

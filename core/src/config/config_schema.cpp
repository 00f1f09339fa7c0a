// The key table of the config (one row per field of config.h, with its meaning) and the
// writers: config_to_toml (every key, commented, loadable again) and config_to_json
// (canonical: sorted keys, floats in their shortest round-trip form).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>

#include "config_detail.h"
#include "moebench/config/strategy_spec.h"

namespace moebench::config_detail {

#define MB_FIELD(sec, k, kind, doc)                                                        \
  FieldDef{#sec, #k, Kind::kind, doc, [](Config& c) -> void* { return &c.sec.k; }, \
           [](const Config& c) -> const void* { return &c.sec.k; }}

#define MB_CHOICE(sec, k, doc) \
  with_codec<std::remove_cvref_t<decltype(std::declval<Config&>().sec.k)>>(MB_FIELD(sec, k, Choice, doc))

namespace {

bool built = false;

// Kind::Choice fields: an enum of config_choices.h, or the synthetic routing (moe/synthetic_routing.h).
template <class E>
  requires std::is_enum_v<E>
std::string parse_word(E& v, const std::string& word) {
  const std::optional<E> e = parse_choice<E>(word);
  if (!e) return "must be " + choices_text<E>() + ", got \"" + excerpt(word) + "\"";
  v = *e;
  return {};
}
template <class E>
  requires std::is_enum_v<E>
std::string word_of(E v) {
  return choice_name(v);
}
std::string parse_word(RoutingSpec& v, const std::string& word) {
  try {
    v = parse_routing(word);
    return {};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}
std::string word_of(const RoutingSpec& v) { return routing_text(v); }

template <class T>
FieldDef with_codec(FieldDef f) {
  f.parse = [](void* p, const std::string& word) { return parse_word(*static_cast<T*>(p), word); };
  f.print = [](const void* p) { return word_of(*static_cast<const T*>(p)); };
  return f;
}

Kind kind_of(OptionKind k) {
  switch (k) {
    case OptionKind::Int: return Kind::Int;
    case OptionKind::Float: return Kind::Float;
    case OptionKind::Double: return Kind::Double;
    case OptionKind::Bool: return Kind::Bool;
    case OptionKind::String: return Kind::String;
    case OptionKind::AutoOrNumber: return Kind::AutoOrNumber;
    case OptionKind::StringList: return Kind::StringList;
  }
  return Kind::String;
}

// The member of OptionValue that holds a value of kind k.
template <class V>
auto* member(V& v, OptionKind k) {
  using P = std::conditional_t<std::is_const_v<V>, const void*, void*>;
  switch (k) {
    case OptionKind::Int: return P(&v.i);
    case OptionKind::Float: return P(&v.f);
    case OptionKind::Double: return P(&v.d);
    case OptionKind::Bool: return P(&v.b);
    case OptionKind::String:
    case OptionKind::AutoOrNumber: return P(&v.s);
    case OptionKind::StringList: return P(&v.strings);
  }
  return P(nullptr);
}

// Each registered strategy's keys, in registration order, as rows of [strategy.<name>].
std::vector<FieldDef> strategy_option_fields() {
  std::vector<FieldDef> out;
  for (const StrategySpec* spec : strategy_specs())
    for (const OptionDef& o : spec->options) {
      const std::string key = spec->name + "." + o.key;
      const OptionKind k = o.kind;
      out.push_back(FieldDef{"strategy." + spec->name, o.key, kind_of(k), o.doc,
                             [key, k](Config& c) -> void* { return member(c.strategy.option(key), k); },
                             [key, k](const Config& c) -> const void* { return member(c.strategy.option(key), k); }});
    }
  return out;
}

std::string strategy_name_doc() {
  std::string doc = "MoE strategy:";
  for (const std::string& n : strategy_names()) doc += (doc.back() == ':' ? " " : " | ") + n;
  return doc;
}

}  // namespace

bool schema_built() { return built; }

const std::vector<FieldDef>& fields() {
  static const std::vector<FieldDef> table = [] {
  std::vector<FieldDef> rows = {
      MB_FIELD(run, name, String, "run name; outputs go to <out_dir>/<name>/"),
      MB_FIELD(run, seed, UInt64, "seeds init, synthetic data and batch sampling"),
      MB_FIELD(run, out_dir, String, "checkpoints and outputs go to <out_dir>/<name>/"),
      MB_FIELD(run, threads, Int, "BLAS/OpenMP threads per rank; 0 = all cores / local ranks"),
      MB_CHOICE(run, device, "cpu | cuda: where each rank computes (cuda: one GPU per rank, local rank -> device)"),
      MB_CHOICE(run, precision, "fp32 | bf16 (mixed: the GEMMs read bf16 copies and accumulate in fp32; activations, master weights and AdamW state fp32; cuda only)"),
      MB_FIELD(run, ranks, Int, "ranks `moebench run` starts through mpirun when not launched by MPI"),
      MB_FIELD(run, oversubscribe_ok, Bool, "local launch: allow > 8 ranks per core or more memory than available"),
      MB_FIELD(run, stop_grace_s, Float, "local launch: seconds ranks get to stop cleanly after Ctrl-C before they are killed"),

      MB_FIELD(cluster, file, Path, "cluster description (sample_configs/clusters/*.toml); keys set here override its keys"),
      MB_FIELD(cluster, name, String, "the cluster's name"),
      MB_FIELD(cluster, nodes, Int, "nodes (virtual on one machine: ranks in node blocks)"),
      MB_FIELD(cluster, devices_per_node, Int, "ranks per node; 0 = world size / nodes"),
      MB_FIELD(cluster, pcie_switch_pairs, IntList, "local ranks sharing a PCIe switch, pairwise: [0,1,2,3] = {0,1},{2,3}"),
      MB_FIELD(cluster, device_tflops, Double, "sustained compute rate per device, TFLOP/s"),
      MB_CHOICE(cluster, train_precision,
                "runtime | fp32 | fp16 | bf16: the precision predictions on this cluster assume for what crosses "
                "the wire (2 bytes per element for fp16 / bf16); runtime = moebench's own (fp32 messages)"),
      MB_FIELD(cluster, device_memory_gib, Double, "memory per device, GiB (2^30 bytes); 0 = not described"),
      MB_FIELD(cluster, host_memory_gib, Double, "host memory per device (MoESys eq. 1 M_CPU), GiB; 0 = not described"),
      MB_FIELD(cluster, ssd_gib, Double, "SSD space per device (MoESys eq. 1 M_SSD), GiB; 0 = not described"),
      MB_FIELD(cluster, efficiency_flops, DoubleList, "efficiency curve: FLOPs per task, ascending; [] = no curve"),
      MB_FIELD(cluster, efficiency, DoubleList, "fraction of device_tflops reached at each efficiency_flops point, in (0, 1]"),
      MB_FIELD(cluster, copy_bw_gbs, Double, "host <-> device copy bandwidth per PCIe switch uplink, GB/s"),
      MB_FIELD(cluster, intra_bw_gbs, Double, "device <-> device bandwidth inside a node, GB/s per direction"),
      MB_FIELD(cluster, intra_latency_us, Double, "latency of an intra-node message, microseconds"),
      MB_FIELD(cluster, pcie_bw_gbs, Double, "bandwidth between the devices of one PCIe switch, GB/s; 0 = the intra-node link"),
      MB_FIELD(cluster, pcie_latency_us, Double, "latency between the devices of one PCIe switch, microseconds"),
      MB_FIELD(cluster, inter_bw_gbs, Double, "bandwidth of one NIC between nodes, GB/s per direction"),
      MB_FIELD(cluster, inter_latency_us, Double, "latency of an inter-node message, microseconds"),
      MB_FIELD(cluster, devices_per_nic, Int, "devices sharing one NIC; 0 = all devices of a node"),
      MB_FIELD(cluster, nodes_per_switch, Int, "nodes under one leaf switch; 0 = all nodes under one switch"),
      MB_FIELD(cluster, spine_bw_gbs, Double, "bandwidth per NIC between leaf switches, GB/s; 0 = inter_bw_gbs"),
      MB_FIELD(cluster, spine_latency_us, Double, "latency between leaf switches, microseconds (with nodes_per_switch)"),
      MB_FIELD(cluster, alltoall_busbw_bytes, DoubleList, "measured AllToAll curve: bytes of one rank's send buffer, ascending; [] = none"),
      MB_FIELD(cluster, alltoall_busbw_gbs, DoubleList, "measured AllToAll bus bandwidth (GB/s) at each alltoall_busbw_bytes point"),
      MB_FIELD(cluster, allgather_busbw_bytes, DoubleList, "measured AllGather curve: bytes of the receive buffer, ascending; [] = none"),
      MB_FIELD(cluster, allgather_busbw_gbs, DoubleList, "measured AllGather bus bandwidth (GB/s) at each allgather_busbw_bytes point"),
      MB_FIELD(cluster, intra_msg_bytes, DoubleList, "measured intra-node rate by message size: bytes of one message, ascending; [] = intra_bw_gbs at any size"),
      MB_FIELD(cluster, intra_msg_gbs, DoubleList, "achieved intra-node GB/s at each intra_msg_bytes point (capped at intra_bw_gbs)"),
      MB_FIELD(cluster, inter_msg_bytes, DoubleList, "measured inter-node rate by message size: bytes of one message, ascending; [] = inter_bw_gbs at any size"),
      MB_FIELD(cluster, inter_msg_gbs, DoubleList, "achieved inter-node GB/s per NIC at each inter_msg_bytes point (capped at inter_bw_gbs)"),
      MB_FIELD(cluster, d2d_bw_gbs, Double, "device-memory copy rate (MoNTA's B3 x r3; the simulator's row packing and reordering copies), GB/s; 0 = copy_bw_gbs"),
      MB_FIELD(cluster, ssd_bw_gbs, Double, "SSD-tier file reads and writes per device (MoESys), GB/s; 0 = copy_bw_gbs"),
      MB_FIELD(cluster, comm_overhead_us, Double, "time a comm task takes beyond its transfers on this host, microseconds (calibrate)"),
      MB_FIELD(cluster, comm_us_per_mb, Double, "further microseconds per MB a comm task sends, on this host (calibrate)"),
      MB_FIELD(cluster, task_names, StringList, "compute tasks with a fitted cost (calibrate: fitted on reference runs)"),
      MB_FIELD(cluster, task_overhead_us, DoubleList, "fixed microseconds of each task_names task, >= 0"),
      MB_FIELD(cluster, task_factors, DoubleList, "factor on the modelled time of each task_names task, > 0"),

      MB_FIELD(model, vocab_size, Int, "vocabulary size (>= 2; 256 for data.source = text)"),
      MB_FIELD(model, seq_len, Int, "context length T (also the position-embedding size)"),
      MB_FIELD(model, hidden, Int, "hidden size C"),
      MB_FIELD(model, layers, Int, "transformer blocks"),
      MB_FIELD(model, heads, Int, "attention heads; must divide hidden"),
      MB_FIELD(model, ffn_mult, Int, "dense FFN and expert FFN width = ffn_mult * hidden"),
      MB_FIELD(model, tied_head, Bool, "LM head shares the token embedding"),
      MB_FIELD(model, embedding_partition, Bool,
               "token embedding split by columns over the data-parallel ranks (MoESys Fig. 9; tp = pp = 1, untied head)"),
      MB_FIELD(model, init_std, Float, "std of the normal weight init"),

      MB_FIELD(parallel, tp, Int, "tensor-parallel group size: attention heads and FFN columns split over tp ranks"),
      MB_FIELD(parallel, vocab_parallel, Bool,
               "with tp > 1: token embedding, LM head and cross-entropy split by vocabulary rows (Megatron)"),
      MB_FIELD(parallel, pp, Int, "pipeline-parallel stages: the blocks split into pp consecutive ranges"),
      MB_FIELD(parallel, dp, Int, "data-parallel size; 0 = run.ranks / (tp x pp)"),
      MB_FIELD(parallel, ep, Int, "expert-parallel group size; 0 = all data-parallel ranks"),
      MB_FIELD(parallel, microbatches, Int,
               "micro-batches per step (gradient accumulation; pipelined when pp > 1): batch = dp x microbatches x micro-batch"),
      MB_CHOICE(parallel, schedule, "pipeline schedule: 1f1b (PipeDream-flush) | gpipe"),
      MB_FIELD(parallel, stage_layers, IntList, "blocks of each pipeline stage, pp entries summing to model.layers; [] = even"),

      MB_FIELD(moe, moe_layers, IntList, "0-based blocks whose FFN is an MoE block; [] = dense"),
      MB_FIELD(moe, experts, Experts,
               "experts per MoE block: one integer, or one per moe_layers entry (PR-MoE)"),
      MB_FIELD(moe, top_k, Int, "experts per token (<= the experts of every MoE block)"),
      MB_FIELD(moe, capacity_factor, Float, "0 = dropless; else capacity = ceil(cf*tokens*k/E)"),
      MB_FIELD(moe, aux_loss_weight, Float, "weight of the GShard load-balancing loss"),
      MB_FIELD(moe, gate_normalize, Bool, "renormalise the top-k gate weights to sum to 1"),
      MB_FIELD(moe, expert_tp, Bool,
               "slice every expert's FFN columns over the tensor-parallel group (DeepSpeed-TED; tp > 1, expert_centric, hier_a2a or monta)"),
      MB_CHOICE(moe, routing,
               "learned | uniform | zipf:S | hot:E,F | rotating | balanced (synthetic expert choice)"),

      MB_FIELD(strategy, name, String, strategy_name_doc()),
      MB_CHOICE(data, source, "synthetic | bin | text"),
      MB_FIELD(data, path, Path, "bin: train shard (uint16 tokens); text: a text file"),
      MB_FIELD(data, val_path, Path, "bin: optional held-out shard"),
      MB_FIELD(data, val_fraction, Float, "held-out tail when no val_path is given, in [0, 1)"),
      MB_FIELD(data, languages, Int, "synthetic: Markov-chain languages in the mixture"),
      MB_FIELD(data, corpus_tokens, Int64, "synthetic: corpus length (> seq_len + 1)"),
      MB_FIELD(data, branching, Int, "synthetic: likely successors per state"),
      MB_FIELD(data, tasks, IntList, "multi-task batches in sequences, task t = synthetic language t, summing to train.batch_size (MoESys UFO: [512, 256, 128, 128]); [] = one task"),
      MB_FIELD(data, rank_tasks, StringList, "with data.tasks: the tasks of each data-parallel rank, \"0\" or merged \"2+3\"; a task on k ranks splits its batch; [] = the elastic proposal (plan --elastic)"),

      MB_FIELD(train, steps, Int, "optimizer steps"),
      MB_FIELD(train, batch_size, Int, "sequences per step"),
      MB_FIELD(train, lr, Float, "peak learning rate (after warmup)"),
      MB_FIELD(train, min_lr_ratio, Float, "cosine decays to lr * min_lr_ratio, in [0, 1]"),
      MB_FIELD(train, warmup_steps, Int, "linear warmup steps"),
      MB_FIELD(train, weight_decay, Float, "AdamW decoupled weight decay"),
      MB_FIELD(train, beta1, Float, "AdamW beta1, in [0, 1)"),
      MB_FIELD(train, beta2, Float, "AdamW beta2, in [0, 1)"),
      MB_FIELD(train, eps, Float, "AdamW epsilon (> 0)"),
      MB_FIELD(train, grad_clip, Float, "global grad-norm clip; 0 = off"),
      MB_FIELD(train, eval_every, Int, "eval on the held-out split every N steps; 0 = at end"),
      MB_FIELD(train, eval_batches, Int, "batches per evaluation"),
      MB_FIELD(train, checkpoint_every, Int, "checkpoint every N steps; 0 = only at the end"),
      MB_FIELD(train, allow_nonfinite, Bool,
               "keep training after a NaN or infinite loss; false: the run stops at that step, exit 1, FAILED"),

      MB_FIELD(store, enabled, Bool, "record the run (metrics, spans, traffic, routing) in the run store"),
      MB_FIELD(store, db, String, "SQLite run database (relative: to the current directory)"),
      MB_FIELD(store, experiment, String, "experiment the run belongs to"),
      MB_FIELD(store, spans_every, Int, "record spans every k-th step (1 = every step)"),

      MB_FIELD(emulate, cluster, Path,
               "link emulator: pace every message over this cluster file's links (its devices = run.ranks); \"\" = off"),
      MB_FIELD(emulate, time_scale, AutoOrNumber,
               "\"auto\" (cluster device rate / this machine's GEMM rate per rank) or a factor > 0 stretching the cluster's time"),

      MB_CHOICE(storage, sparse,
               "where expert states (fp32 weights + Adam m, v) live: \"memory\" or \"ssd\" (files under ssd_dir, LFU host cache)"),
      MB_FIELD(storage, ssd_dir, Path, "folder of the expert state files (sparse = \"ssd\"): an existing writable directory"),
      MB_FIELD(storage, host_cache_bytes, Int64, "host cache of expert states, bytes; 0 = unlimited; else >= one expert's record"),
      MB_FIELD(storage, device_bytes, Int64,
               "device memory for the experts' weights and gradients (sparse = \"ssd\"), bytes; 0 = unlimited"),
      MB_FIELD(storage, sparse_prefetch, Bool,
               "Algorithm 2 prefetch: state loads and write-backs run ahead of the expert updates (false: no overlap)"),
      MB_FIELD(storage, hit_threshold, Double, "Algorithm 2: records with fewer hits are evicted last (0 = plain LFU)"),
      MB_FIELD(storage, decay, Double, "Algorithm 2: every hit count is multiplied by this (beta, in [0, 1]) ..."),
      MB_FIELD(storage, decay_every, Int, "... every this many requests (K); 0 = no decay"),
      MB_CHOICE(storage, dense,
               "dense parameters: \"replicated\" (every DP rank holds all) or \"zero3\" (sharded over DP, all-gathered per layer)"),
      MB_FIELD(storage, dense_prefetch, Bool, "zero3: all-gather layer i+1 on the comm stream while layer i computes (false: on demand)"),
      MB_FIELD(storage, zero3_experts, Bool, "zero3: shard the experts too, with their block (needs parallel.ep = 1 and expert_centric or fastermoe)"),
  };
  const auto after = std::find_if(rows.begin(), rows.end(), [](const FieldDef& f) { return f.name() == "strategy.name"; }) + 1;
  const std::vector<FieldDef> options = strategy_option_fields();
  rows.insert(after, options.begin(), options.end());
  built = true;
  return rows;
  }();
  return table;
}

#undef MB_FIELD

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const FieldDef& f : fields())
      if (std::find(v.begin(), v.end(), f.section) == v.end()) v.push_back(f.section);
    return v;
  }();
  return names;
}

// What each section holds, for the generated reference (config_reference.cpp); "" for none.
const char* section_doc(std::string_view section) {
  static const std::vector<std::pair<std::string_view, const char*>> docs = {
      {"run", "What runs and how: name, seed, output folder, threads, device, precision, the ranks `moebench run` "
              "starts and the local launcher's guards."},
      {"cluster",
       "The machine predictions are made for (each strategy's predict(), `plan`, `simulate`, the link emulator): "
       "devices, links, NICs, switches, memories, measured collective curves and `calibrate`'s fitted costs. "
       "`nodes`, `devices_per_node` and `pcie_switch_pairs` also place a run's ranks; the rates change nothing in how "
       "a run executes. Units: GB/s = 10^9 bytes/s in one direction, latencies in microseconds, compute in TFLOP/s. "
       "A cluster file (`cluster.file`) is TOML with one `[cluster]` section holding any of these keys but `file`; "
       "the config's own `[cluster]` keys and `--set` override the file's."},
      {"model", "The MoE-GPT decoder: vocabulary, context, width, depth, heads, FFN width, head tying, init."},
      {"parallel",
       "The layout: pp x dp x tp ranks in Megatron's order (tensor-parallel ranks adjacent, pipeline stages "
       "outermost), the expert-parallel group, micro-batches and the pipeline schedule."},
      {"moe", "Which blocks are MoE blocks (0-based block indices), their experts, the router and synthetic routing."},
      {"strategy",
       "The MoE strategy. Each strategy reads its options from its own section `[strategy.<name>]`; `janus` also "
       "reads `[strategy.expert_centric]` and `[strategy.data_centric]` for its blocks, `per_block` the sections of "
       "the strategies it names, `ppmoe` none. Setting a section the chosen strategy does not read is a config "
       "error, so an ablation cannot vary a switch that does nothing."},
      {"strategy.expert_centric", "Options of `expert_centric` (all-to-all-v; Tutel's overlap degree): "
                                  "[strategies/janus.md](strategies/janus.md)."},
      {"strategy.hier_a2a", "Options of `hier_a2a` (two-phase hierarchical all-to-all): "
                            "[strategies/janus.md](strategies/janus.md)."},
      {"strategy.data_centric", "Options of `data_centric` (Janus: workers pull the experts they need): "
                                "[strategies/janus.md](strategies/janus.md)."},
      {"strategy.janus", "Options of `janus` (per block data_centric or expert_centric by R): "
                         "[strategies/janus.md](strategies/janus.md)."},
      {"strategy.monta", "Options of `monta` (MoNTA's levels and chunks under tensor parallelism): "
                         "[strategies/monta.md](strategies/monta.md)."},
      {"strategy.fastermoe", "Options of `fastermoe` (shadowing, smart schedule, topology-aware gate): "
                             "[strategies/fastermoe.md](strategies/fastermoe.md)."},
      {"strategy.per_block", "Options of `per_block` (one strategy per MoE block, as the planner writes it): "
                             "[simulator-emulator.md](simulator-emulator.md)."},
      {"data", "Training data: the synthetic Markov-chain mixture, llm.c `.bin` shards or raw text; multi-task "
               "batches and their placement on the data-parallel ranks (MoESys elastic training)."},
      {"train", "Optimizer steps, batch, AdamW and its schedule, clipping, evaluation and checkpoints."},
      {"store", "The SQLite run store every `moebench run` records into."},
      {"emulate", "The link emulator: a real run on one machine pacing every message over a cluster's links."},
      {"storage",
       "Where parameters and optimizer states live (MoESys hierarchical storage): the experts' states in memory or "
       "on SSD behind an LFU host cache, dense parameters replicated or sharded over DP (ZeRO-3)."},
  };
  for (const auto& [name, doc] : docs)
    if (name == section) return doc;
  return "";
}

const FieldDef* find_field(std::string_view section, std::string_view key) {
  for (const auto& f : fields())
    if (section == f.section && key == f.key) return &f;
  return nullptr;
}

std::optional<double> auto_or_number_value(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto res = std::from_chars(text.data(), end, v);
  if (text.empty() || res.ec != std::errc() || res.ptr != end) return std::nullopt;
  return v;
}

std::string float_text(float v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

int edit_distance(std::string_view a, std::string_view b, int max_distance) {
  const size_t n = a.size(), m = b.size();
  const size_t band = (size_t)std::max(max_distance, 0);
  if ((n > m ? n - m : m - n) > band) return max_distance + 1;  // the length gap alone is more
  // Three rows of the DP; only cells with |i - j| <= band can stay within max_distance.
  const int far = max_distance + 1;
  std::vector<int> prev2(m + 1, far), prev(m + 1, far), cur(m + 1, far);
  for (size_t j = 0; j <= std::min(m, band); ++j) prev[j] = (int)j;
  int prev_best = 0;
  auto lower = [](char ch) { return (char)std::tolower((unsigned char)ch); };
  for (size_t i = 1; i <= n; ++i) {
    const size_t lo = i > band ? i - band : 1, hi = std::min(m, i + band);
    // Cells left of the band hold values of older rows; right of it nothing was written yet.
    cur[0] = i <= band ? (int)i : far;
    cur[lo - 1] = lo > 1 ? far : cur[0];
    int row_best = cur[0];
    for (size_t j = lo; j <= hi; ++j) {
      const int cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      int d = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d = std::min(d, prev2[j - 2] + 1);
      cur[j] = std::min(d, far);
      row_best = std::min(row_best, cur[j]);
    }
    // A path reaches later rows through row i or (a transposition) row i - 1.
    if (row_best > max_distance && prev_best > max_distance) return far;
    prev_best = row_best;
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return std::min(prev[m], far);
}

namespace {

std::string int_list_text(const std::vector<int>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(v[i]);
  }
  return out + "]";
}

// Shortest text that reads back as the same double, always a TOML float ("10.0", "1e+09").
std::string double_text(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string double_list_text(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += double_text(v[i]);
  }
  return out + "]";
}

}  // namespace

std::string value_text(const FieldDef& f, const Config& c) {
  switch (f.kind) {
    case Kind::Int: return std::to_string(f.get<int>(c));
    case Kind::Int64: return std::to_string(f.get<int64_t>(c));
    case Kind::UInt64: return std::to_string(f.get<uint64_t>(c));
    case Kind::Float: {
      const float v = f.get<float>(c);
      std::string s = float_text(v);
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "1" -> "1.0"; inf/nan kept
      return s;
    }
    case Kind::Double: return double_text(f.get<double>(c));
    case Kind::Bool: return f.get<bool>(c) ? "true" : "false";
    case Kind::String:
    case Kind::Path: return toml_string_literal(f.get<std::string>(c));
    case Kind::Choice: return toml_string_literal(f.print(f.cref(c)));
    case Kind::AutoOrNumber: {
      const std::string& v = f.get<std::string>(c);
      return auto_or_number_value(v) ? double_text(*auto_or_number_value(v)) : toml_string_literal(v);
    }
    case Kind::IntList:
    case Kind::Experts: return int_list_text(f.get<std::vector<int>>(c));
    case Kind::DoubleList: return double_list_text(f.get<std::vector<double>>(c));
    case Kind::StringList: {
      std::string s = "[";
      for (const std::string& v : f.get<std::vector<std::string>>(c)) s += (s.size() > 1 ? ", " : "") + toml_string_literal(v);
      return s + "]";
    }
  }
  return {};
}

namespace {

nlohmann::json value_json(const FieldDef& f, const Config& c) {
  switch (f.kind) {
    case Kind::Int: return f.get<int>(c);
    case Kind::Int64: return f.get<int64_t>(c);
    case Kind::UInt64: return f.get<uint64_t>(c);
    case Kind::Float: return std::strtod(float_text(f.get<float>(c)).c_str(), nullptr);
    case Kind::Double: return f.get<double>(c);
    case Kind::Bool: return f.get<bool>(c);
    case Kind::String:
    case Kind::Path: return f.get<std::string>(c);
    case Kind::Choice: return f.print(f.cref(c));
    case Kind::AutoOrNumber: {
      const std::string& v = f.get<std::string>(c);
      if (const auto x = auto_or_number_value(v)) return *x;
      return v;
    }
    case Kind::IntList:
    case Kind::Experts: return f.get<std::vector<int>>(c);
    case Kind::DoubleList: return f.get<std::vector<double>>(c);
    case Kind::StringList: return f.get<std::vector<std::string>>(c);
  }
  return nullptr;
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Int:
    case Kind::Int64:
    case Kind::UInt64: return "integer";
    case Kind::Float:
    case Kind::Double: return "float";
    case Kind::Bool: return "boolean";
    case Kind::String:
    case Kind::Choice: return "string";
    case Kind::Path: return "path";
    case Kind::IntList: return "integer array";
    case Kind::DoubleList: return "float array";
    case Kind::StringList: return "string array";
    case Kind::Experts: return "integer or integer array";
    case Kind::AutoOrNumber: return "auto or number";
  }
  return "";
}

}  // namespace moebench::config_detail

namespace moebench {

std::string toml_string_literal(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (ch < 0x20 || ch == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04X", ch);
          out += buf;
        } else {
          out += (char)ch;
        }
    }
  }
  return out + "\"";
}

using namespace config_detail;

std::string config_to_toml(const Config& config) {
  std::ostringstream out;
  out << "# moebench config, fully resolved: every key, defaults included.\n";
  if (!config.source_file.empty()) out << "# from: " << config.source_file << "\n";
  // Option sections of strategies the config does not run are written commented out: setting
  // them is an error (config_validate.cpp), yet every key stays documented.
  const std::vector<std::string> applies = strategy_option_sections(config.strategy.name);
  std::string section, comment;
  for (const auto& f : fields()) {
    if (section != f.section) {
      section = f.section;
      const bool options = section.starts_with("strategy.");
      comment = options && std::find(applies.begin(), applies.end(), section.substr(9)) == applies.end() ? "# " : "";
      out << "\n" << comment << "[" << section << "]";
      if (!comment.empty()) out << "  (not read by strategy.name = " << config.strategy.name << ")";
      out << "\n";
    }
    std::string line = comment + f.key + " = " + value_text(f, config);
    if (line.size() < 32) line.resize(32, ' ');
    out << line << "  # " << f.doc << "\n";
  }
  return out.str();
}

std::string changed_options_toml(const StrategyConfig& s, const std::string& section) {
  Config c;
  c.strategy = s;
  const Config defaults;
  std::string lines;
  for (const auto& f : fields())
    if (f.section == "strategy." + section && value_text(f, c) != value_text(f, defaults))
      lines += f.key + " = " + value_text(f, c) + "\n";
  return lines.empty() ? "" : "[strategy." + section + "]\n" + lines;
}

nlohmann::json config_to_json(const Config& config) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : fields()) {
    nlohmann::json* node = &j;  // [strategy.<x>] -> {"strategy": {"<x>": {...}}}
    std::string_view section = f.section;
    for (size_t dot; (dot = section.find('.')) != std::string_view::npos; section.remove_prefix(dot + 1))
      node = &(*node)[std::string(section.substr(0, dot))];
    (*node)[std::string(section)][f.key] = value_json(f, config);
  }
  return j;
}

const std::vector<ConfigKeyInfo>& config_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> v;
    for (const auto& f : fields()) v.push_back({f.name(), kind_name(f.kind), f.doc});
    return v;
  }();
  return keys;
}

}  // namespace moebench

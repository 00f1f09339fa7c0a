// The rules a resolved config must satisfy: value ranges, consistency between keys (heads vs
// hidden, MoE blocks vs layers, top_k vs experts, vocab vs data source, the parallel layout) and
// readable data files. [cluster] and the strategies' options have their own files
// (config_checker.h). A rule that involves a key already rejected while reading is skipped, so
// one typo gives one message rather than a cascade.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "config_checker.h"
#include "value_bounds.h"
#include "moebench/config/path_limits.h"
#include "moebench/config/cluster_file.h"
#include "moebench/config/config_layout.h"
#include "moebench/config/data_limits.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/config/strategy_spec.h"

namespace moebench::config_detail {

void Checker::run() {
  // moe.experts: one integer for every MoE block -> one entry per block.
  if (ok({"moe.experts"}) && st_.experts_scalar)
    c_.moe.experts.assign(c_.moe.moe_layers.size(), st_.experts_value);
  check_run();
  check_cluster();
  check_model();
  check_moe();
  check_parallel();
  check_data();
  check_train();
  check_emulate();
  check_storage();
  check_tasks();
}

void Checker::check_run() {
  const auto& r = c_.run;
  if (ok({"run.name"})) {
    if (r.name.empty()) fail("run.name", "must not be empty");
    else if (r.name.find_first_of("/\\") != std::string::npos)
      fail("run.name", "must not contain '/' or '\\' (it names the folder <out_dir>/<name>), got \"" +
                           excerpt(r.name) + "\"");
    else if (r.name == "." || r.name == "..")
      fail("run.name", "must not be \"" + r.name + "\" (it names the folder <out_dir>/<name>, inside run.out_dir)");
    else if (r.name.size() > kMaxFileNameBytes)
      fail("run.name", "has " + std::to_string(r.name.size()) + " bytes; it names the folder <out_dir>/<name>, and a "
                       "file name has at most " + std::to_string(kMaxFileNameBytes));
  }
  if (ok({"run.out_dir"}) && r.out_dir.empty()) fail("run.out_dir", "must not be empty");
  else if (ok({"run.out_dir"}))
    if (const std::string why = path_length_problem(r.out_dir); !why.empty())
      fail("run.out_dir", "cannot name a folder: " + why + " (got \"" + excerpt(r.out_dir) + "\")");
  at_least("run.threads", r.threads, 0, " (0 = all cores)");
  if (ok({"run.threads"}) && r.threads > kMaxThreads)
    fail("run.threads", "must be <= " + std::to_string(kMaxThreads) + " (threads of one process), got " +
                            std::to_string(r.threads));
  if (ok({"run.precision", "run.device"}) && r.precision == Precision::bf16 && r.device == Device::cpu)
    fail("run.precision", "\"bf16\" needs run.device = \"cuda\" (the CPU path computes in fp32)");
}

// [run] ranks, [cluster], [parallel], [strategy] and [moe] routing. run.ranks is the world
// size: `moebench run` under mpirun / srun loads the config with run.ranks set to the launched
// world, so every rule here holds for the ranks that actually start.
void Checker::check_parallel() {
  at_least("run.ranks", c_.run.ranks, 1);
  non_negative("run.stop_grace_s", c_.run.stop_grace_s);
  at_least("store.spans_every", c_.store.spans_every, 1);
  check_strategy_options();
  if (ok({"store.db"}) && c_.store.db.empty()) fail("store.db", "must not be empty");
  if (ok({"store.experiment"}) && c_.store.experiment.empty()) fail("store.experiment", "must not be empty");
  at_least("parallel.tp", c_.parallel.tp, 1);
  at_least("parallel.pp", c_.parallel.pp, 1);
  at_least("parallel.dp", c_.parallel.dp, 0, " (0 = run.ranks / (parallel.tp x parallel.pp))");
  at_least("parallel.ep", c_.parallel.ep, 0, " (0 = all data-parallel ranks)");
  at_least("parallel.microbatches", c_.parallel.microbatches, 1);
  check_stages();
  const int ranks = c_.run.ranks, nodes = c_.cluster.nodes, dpn = c_.cluster.devices_per_node;
  if (ok({"run.ranks", "cluster.nodes", "cluster.devices_per_node"}) && ranks >= 1 && nodes >= 1 && dpn >= 0) {
    if (dpn > 0 && (int64_t)nodes * dpn != ranks)
      fail("cluster.devices_per_node", "cluster.nodes x devices_per_node = " + std::to_string((int64_t)nodes * dpn) +
                                           " must equal run.ranks = " + std::to_string(ranks), "run.ranks");
    else if (dpn == 0 && ranks % nodes != 0)
      fail("cluster.nodes", "must divide run.ranks = " + std::to_string(ranks) + ", got " + std::to_string(nodes),
           "run.ranks");
  }
  check_layout();
  check_embedding_partition();
  if (const RoutingSpec& spec = c_.moe.routing;
      ok({"moe.routing", "moe.experts"}) && spec.kind == RoutingSpec::Kind::hot)
    for (size_t i = 0; i < c_.moe.experts.size(); ++i)
      if (spec.hot_expert >= c_.moe.experts[i]) {
        fail("moe.routing", "hot expert " + std::to_string(spec.hot_expert) + " does not exist in MoE block " +
                                std::to_string(c_.moe.moe_layers[i]) + " (" + std::to_string(c_.moe.experts[i]) +
                                " experts)");
        break;
      }
  if (ok({"strategy.name"}) && !find_strategy_spec(c_.strategy.name))
    fail("strategy.name", "unknown strategy \"" + excerpt(c_.strategy.name) + "\" (known: " + known_strategies_text() + ")");
}

// The data-parallel size every layout rule uses: parallel.dp, or run.ranks / (parallel.tp x
// parallel.pp) when it is 0. 0 when the keys give none (a rejected key, or a layout
// check_groups reports).
int Checker::data_parallel() const {
  if (!ok({"run.ranks", "parallel.tp", "parallel.pp", "parallel.dp"})) return 0;
  return data_parallel_size(c_.run.ranks, c_.parallel.tp, c_.parallel.pp, c_.parallel.dp);
}

// The blocks of each pipeline stage: pp no larger than the blocks; stage_layers (when given)
// one positive entry per stage, summing to model.layers.
void Checker::check_stages() {
  const int pp = c_.parallel.pp, layers = c_.model.layers;
  if (!ok({"parallel.pp", "model.layers", "parallel.stage_layers"}) || pp < 1 || layers < 1) return;
  const auto& sl = c_.parallel.stage_layers;
  if (sl.empty()) {
    if (pp > layers)
      fail("parallel.pp", "the " + std::to_string(pp) + " pipeline stages need at least one block each, but "
                          "model.layers = " + std::to_string(layers), "model.layers");
    return;
  }
  if ((int)sl.size() != pp) {
    fail("parallel.stage_layers", "needs one entry per pipeline stage (parallel.pp = " + std::to_string(pp) +
                                      "), got " + std::to_string(sl.size()), "parallel.pp");
    return;
  }
  int64_t sum = 0;
  for (size_t i = 0; i < sl.size(); ++i) {
    if (sl[i] < 1) {
      fail("parallel.stage_layers", "stage " + std::to_string(i) + " has " + std::to_string(sl[i]) +
                                        " blocks; every stage needs at least one");
      return;
    }
    sum += sl[i];
  }
  if (sum != layers)
    fail("parallel.stage_layers", "the stages' blocks sum to " + std::to_string(sum) + ", model.layers = " +
                                      std::to_string(layers), "model.layers");
}

// Where the data-parallel size comes from, for messages: " (run.ranks = 4)" without tensor
// parallelism (the text of earlier versions), else " (run.ranks = 8 / parallel.tp = 2)", or
// " (parallel.dp = 4)" when set.
std::string Checker::data_parallel_origin() const {
  if (c_.parallel.dp > 0) return " (parallel.dp = " + std::to_string(c_.parallel.dp) + ")";
  std::string s = " (run.ranks = " + std::to_string(c_.run.ranks);
  if (c_.parallel.tp > 1) s += " / parallel.tp = " + std::to_string(c_.parallel.tp);
  if (c_.parallel.pp > 1) s += " / parallel.pp = " + std::to_string(c_.parallel.pp);
  return s + ")";
}

// The world as pp x dp x tp (dist/parallel_layout.h): tp, pp and dp against
// run.ranks, tp against the split of the model, the batch over the data-parallel ranks and the
// expert-parallel groups. Returns the expert-parallel group size, 0 when the groups cannot be
// formed (reported, or resting on a key rejected while reading).
int Checker::check_groups() {
  const int ranks = c_.run.ranks, tp = c_.parallel.tp, pp = c_.parallel.pp, dp_set = c_.parallel.dp;
  if (!ok({"parallel.tp"}) || tp < 1) return 0;
  const auto& m = c_.model;
  // Megatron splits the attention heads (and with them the hidden columns of Q, K, V and the
  // output projection) and the FFN columns (ffn_mult x hidden) over the tensor-parallel ranks.
  // Skipped when heads do not divide hidden: check_model reports that.
  if (tp > 1 && ok({"model.heads", "model.hidden"}) && m.heads >= 1 && m.hidden >= 1 && m.hidden % m.heads == 0 &&
      (m.heads % tp != 0 || m.hidden % tp != 0))
    fail("parallel.tp", "must divide model.heads = " + std::to_string(m.heads) + " and model.hidden = " +
                            std::to_string(m.hidden) + " (attention heads and FFN columns are split over the "
                            "tensor-parallel ranks), got " + std::to_string(tp),
         "model.heads");
  if (!ok({"run.ranks", "parallel.pp"}) || ranks < 1 || pp < 1) return 0;
  if (ranks % ((int64_t)tp * pp) != 0) {
    const std::string what = pp > 1 ? "parallel.tp x parallel.pp = " + std::to_string(tp) + " x " + std::to_string(pp)
                                    : "parallel.tp = " + std::to_string(tp);
    fail(tp > 1 || pp == 1 ? "parallel.tp" : "parallel.pp",
         "run.ranks = " + std::to_string(ranks) + " is not divisible by " + what, "run.ranks");
    return 0;
  }
  if (!ok({"parallel.dp"}) || dp_set < 0) return 0;
  if (dp_set > 0 && (int64_t)dp_set * tp * pp != ranks) {
    fail("parallel.dp", "parallel.pp x parallel.dp x parallel.tp = " + std::to_string(pp) + " x " +
                            std::to_string(dp_set) + " x " + std::to_string(tp) + " = " +
                            std::to_string((int64_t)dp_set * tp * pp) + " must equal run.ranks = " +
                            std::to_string(ranks),
         "run.ranks");
    return 0;
  }
  const int dp = data_parallel();
  const std::string origin = data_parallel_origin();
  const auto& t = c_.train;
  const int micro = c_.parallel.microbatches;
  // Multi-task data splits the batch by task, not evenly (config_validate_tasks.cpp).
  const bool even = c_.data.tasks.empty();
  if (even && ok({"train.batch_size"}) && t.batch_size >= 1 && t.batch_size % dp != 0)
    fail("train.batch_size", "the global batch must divide over the " + std::to_string(dp) +
                                 " data-parallel ranks" + origin + ", got " + std::to_string(t.batch_size),
         "run.ranks");
  else if (even && ok({"train.batch_size", "parallel.microbatches"}) && t.batch_size >= 1 && micro >= 1 &&
           t.batch_size / dp % micro != 0)
    fail("parallel.microbatches", "must divide the " + std::to_string(t.batch_size / dp) +
                                      " sequences of a data-parallel rank (train.batch_size = " +
                                      std::to_string(t.batch_size) + " over " + std::to_string(dp) +
                                      " data-parallel ranks" + origin + "), got " + std::to_string(micro),
         "train.batch_size");
  const int ep_set = c_.parallel.ep;
  if (!ok({"parallel.ep"}) || ep_set < 0) return 0;
  const bool experts_ok = ok({"moe.experts", "moe.moe_layers"}) && c_.moe.experts.size() == c_.moe.moe_layers.size();
  if (ok({"parallel.vocab_parallel"}) && c_.parallel.vocab_parallel) {
    if (tp == 1)
      fail("parallel.vocab_parallel", "needs parallel.tp > 1 (the vocabulary is split over the tensor-parallel ranks)",
           "parallel.tp");
    else if (ok({"model.vocab_size"}) && c_.model.vocab_size >= 2 && c_.model.vocab_size % tp != 0)
      fail("parallel.vocab_parallel", "model.vocab_size = " + std::to_string(c_.model.vocab_size) +
                                          " does not divide over the parallel.tp = " + std::to_string(tp) +
                                          " tensor-parallel ranks",
           "model.vocab_size");
  }
  if (ok({"moe.expert_tp", "strategy.name"}) && c_.moe.expert_tp) {
    // Expert slicing needs a tensor-parallel group to slice over, and a strategy that keeps
    // every expert whole on its owner (ppmoe already spreads the experts over that group).
    if (tp == 1)
      fail("moe.expert_tp", "needs parallel.tp > 1 (the expert FFNs are sliced over the tensor-parallel ranks)",
           "parallel.tp");
    else
      for (const std::string& n : block_strategy_names(c_.strategy))
        if (const StrategySpec* spec = find_strategy_spec(n); spec && !spec->expert_tp_refusal.empty()) {
          std::string why = spec->expert_tp_refusal;
          if (const auto at = why.find("{name}"); at != std::string::npos) why.replace(at, 6, c_.strategy.name);
          fail("moe.expert_tp", why, "strategy.name");
          break;
        }
  }
  if (ok({"strategy.name"}) && expert_groups_of(c_) == ExpertGroups::tensor_parallel) {
    // Pipeline MoE: the experts of a block are spread over the tensor-parallel group, which
    // already holds the block's tokens; no data-parallel rank exchanges tokens.
    if (ep_set != 0 && ep_set != tp) {
      fail("parallel.ep", "must be 0 or parallel.tp = " + std::to_string(tp) + " for strategy.name = \"" + c_.strategy.name + "\" "
                          "(its expert-parallel group is the tensor-parallel group), got " + std::to_string(ep_set),
           "strategy.name");
      return 0;
    }
    if (experts_ok)
      for (size_t i = 0; i < c_.moe.experts.size(); ++i)
        if (c_.moe.experts[i] >= 1 && c_.moe.experts[i] % tp != 0) {
          fail("parallel.tp", "the " + std::to_string(c_.moe.experts[i]) + " experts of MoE block " +
                                  std::to_string(c_.moe.moe_layers[i]) + " do not divide over the parallel.tp = " +
                                  std::to_string(tp) + " tensor-parallel ranks (" + c_.strategy.name + " places experts inside the "
                                  "tensor-parallel group)",
               "moe.experts");
          return 0;
        }
    return tp;
  }
  const int ep = ep_set == 0 ? dp : ep_set;
  if (dp % ep != 0) {
    fail("parallel.ep", "must divide the " + std::to_string(dp) + " data-parallel ranks" + origin + ", got " +
                            std::to_string(ep), "run.ranks");
    return 0;
  }
  const std::string ep_text = ep_set == 0 ? "the " + std::to_string(ep) + " ranks (parallel.ep = 0: all of them)"
                                          : "parallel.ep = " + std::to_string(ep) + " ranks";
  if (experts_ok)
    for (size_t i = 0; i < c_.moe.experts.size(); ++i)
      if (c_.moe.experts[i] >= 1 && c_.moe.experts[i] % ep != 0) {
        fail(ep_set == 0 ? "moe.experts" : "parallel.ep",
             "the " + std::to_string(c_.moe.experts[i]) + " experts of MoE block " +
                 std::to_string(c_.moe.moe_layers[i]) + " do not divide over " + ep_text +
                 ": every expert-parallel rank must hold the same number of experts",
             ep_set == 0 ? "run.ranks" : "moe.experts");
        return 0;
      }
  return ep;
}

// How the world of run.ranks ranks is laid out (check_groups; nodes in blocks of
// devices_per_node): every rule the launched ranks would otherwise find one by one.
void Checker::check_layout() {
  const int ranks = c_.run.ranks;
  if (!ok({"run.ranks"}) || ranks < 1) return;
  const std::string world = " (run.ranks = " + std::to_string(ranks) + ")";
  if (check_groups() == 0) return;
  // Nodes: validated against run.ranks in check_parallel; here the strategies' needs.
  if (!ok({"cluster.nodes", "cluster.devices_per_node"}) || c_.cluster.nodes < 1 || ranks % c_.cluster.nodes != 0)
    return;
  const int per_node = c_.cluster.devices_per_node > 0 ? c_.cluster.devices_per_node : ranks / c_.cluster.nodes;
  if (per_node * c_.cluster.nodes != ranks) return;
  if (ok({"cluster.pcie_switch_pairs"}) && c_.cluster.devices_per_node == 0)  // (else check_cluster)
    for (int r : c_.cluster.pcie_switch_pairs)
      if (r >= per_node) {
        fail("cluster.pcie_switch_pairs", "local rank " + std::to_string(r) + " does not exist: a node has " +
                                              std::to_string(per_node) + " ranks" + world);
        break;
      }
  const int per_nic = c_.cluster.devices_per_nic;
  if (ok({"cluster.devices_per_nic"}) && c_.cluster.devices_per_node == 0 && per_nic > 0 && per_node % per_nic != 0)
    fail("cluster.devices_per_nic", "must divide the " + std::to_string(per_node) + " ranks of a node" + world +
                                        ", got " + std::to_string(per_nic), "run.ranks");
  std::optional<ParallelLayout> layout;
  try {
    layout.emplace(layout_of(c_));
  } catch (const std::invalid_argument&) {
    return;  // the blocks do not split into the stages: check_stages reported it
  }
  check_strategy_layout(*layout, per_node);
}

// model.embedding_partition (MoESys §IV-C, model/embedding_partition.h): embed.wte's columns
// split over the data-parallel ranks. Implemented for pure data (+ expert) parallelism with an
// untied head; the combinations below are refused rather than half-supported:
//   parallel.tp > 1 (and so parallel.vocab_parallel): the TP ranks of a DP rank would each need
//     the exchange, and vocab_parallel already splits the same table by rows;
//   parallel.pp > 1: the embedding lives on the first stage only, whose DP group is not the
//     whole DP world, and the tied copy on the last stage would need the partition too;
//   model.tied_head: the head would need all H columns of every vocabulary row (a [N, V]
//     reduction over the DP group per micro-batch), which the paper does not describe.
void Checker::check_embedding_partition() {
  if (!ok({"model.embedding_partition"}) || !c_.model.embedding_partition) return;
  const char* key = "model.embedding_partition";
  if (ok({"parallel.tp"}) && c_.parallel.tp > 1)
    return fail(key, "needs parallel.tp = 1 (the table is split over the data-parallel ranks only), got " +
                         std::to_string(c_.parallel.tp), "parallel.tp");
  if (ok({"parallel.vocab_parallel"}) && c_.parallel.vocab_parallel)
    return fail(key, "does not combine with parallel.vocab_parallel (that splits the same table by rows over TP)",
                "parallel.vocab_parallel");
  if (ok({"parallel.pp"}) && c_.parallel.pp > 1)
    return fail(key, "needs parallel.pp = 1 (pipeline stages are not supported with the partitioned table), got " +
                         std::to_string(c_.parallel.pp), "parallel.pp");
  if (ok({"model.tied_head"}) && c_.model.tied_head)
    return fail(key, "needs model.tied_head = false (the head would need every column of the partitioned table)",
                "model.tied_head");
  const int dp = data_parallel();
  if (dp > 0 && ok({"model.hidden"}) && c_.model.hidden >= 1 && c_.model.hidden % dp != 0)
    fail(key, "model.hidden = " + std::to_string(c_.model.hidden) + " does not divide over the " +
                  std::to_string(dp) + " data-parallel ranks" + data_parallel_origin(),
         "model.hidden");
}

void Checker::check_model() {
  const auto& m = c_.model;
  at_least("model.vocab_size", m.vocab_size, 2);
  at_least("model.seq_len", m.seq_len, 1);
  at_least("model.hidden", m.hidden, 1);
  at_least("model.layers", m.layers, 1);
  at_least("model.heads", m.heads, 1);
  at_least("model.ffn_mult", m.ffn_mult, 1);
  positive("model.init_std", m.init_std);
  if (ok({"model.hidden", "model.heads"}) && m.hidden >= 1 && m.heads >= 1 && m.hidden % m.heads != 0)
    fail("model.heads", "must divide model.hidden (" + std::to_string(m.hidden) + "), got " +
                            std::to_string(m.heads), "model.hidden");
}

void Checker::check_moe() {
  auto& moe = c_.moe;
  const int layers = c_.model.layers;
  if (ok({"moe.moe_layers"})) {
    const bool range_ok = ok({"model.layers"}) && layers >= 1;
    std::set<int> seen;
    for (int b : moe.moe_layers) {
      if (range_ok && (b < 0 || b >= layers))
        fail("moe.moe_layers", "block index " + std::to_string(b) + " out of range [0, " +
                                   std::to_string(layers) + ") (model.layers = " +
                                   std::to_string(layers) + ")");
      else if (!seen.insert(b).second)
        fail("moe.moe_layers", "block " + std::to_string(b) + " is listed twice");
    }
  }
  bool experts_ok = ok({"moe.experts", "moe.moe_layers"});
  if (experts_ok && moe.experts.size() != moe.moe_layers.size()) {
    fail("moe.experts", "has " + std::to_string(moe.experts.size()) + " entries but moe.moe_layers has " +
                            std::to_string(moe.moe_layers.size()) +
                            "; give one integer or one entry per MoE block");
    experts_ok = false;
  }
  if (experts_ok) {
    if (st_.experts_scalar && st_.experts_value < 1) {
      fail("moe.experts", "must be >= 1, got " + std::to_string(st_.experts_value));
      experts_ok = false;
    }
    for (size_t i = 0; i < moe.experts.size() && !st_.experts_scalar; ++i)
      if (moe.experts[i] < 1) {
        fail("moe.experts", "must be >= 1 for every block, entry " + std::to_string(i) + " (block " +
                                std::to_string(moe.moe_layers[i]) + ") is " + std::to_string(moe.experts[i]));
        experts_ok = false;
      }
  }
  if (ok({"moe.top_k"}) && moe.top_k < 1) {
    fail("moe.top_k", "must be >= 1, got " + std::to_string(moe.top_k));
  } else if (ok({"moe.top_k"}) && experts_ok && !moe.experts.empty()) {
    size_t min_i = 0;
    for (size_t i = 1; i < moe.experts.size(); ++i)
      if (moe.experts[i] < moe.experts[min_i]) min_i = i;
    if (moe.top_k > moe.experts[min_i])
      fail("moe.top_k", "must be <= the experts of every MoE block (block " +
                            std::to_string(moe.moe_layers[min_i]) + " has " +
                            std::to_string(moe.experts[min_i]) + "), got " + std::to_string(moe.top_k),
           "moe.experts");
  }
  non_negative("moe.capacity_factor", moe.capacity_factor, " (0 = dropless)");
  non_negative("moe.aux_loss_weight", moe.aux_loss_weight);
}

void Checker::check_data() {
  const auto& d = c_.data;
  const int vocab = c_.model.vocab_size;
  unit("data.val_fraction", d.val_fraction);
  at_least("data.languages", d.languages, 1);
  at_least("data.branching", d.branching, 1);
  at_least("data.corpus_tokens", d.corpus_tokens, 1);
  if (!ok({"data.source"})) return;
  const std::string src = "data.source = \"" + choice_name(d.source) + "\"";
  if (d.source == DataSource::synthetic) {
    const int seq = c_.model.seq_len;
    if (ok({"data.corpus_tokens", "model.seq_len"}) && d.corpus_tokens >= 1 && seq >= 1 &&
        d.corpus_tokens <= (int64_t)seq + 1)
      fail("data.corpus_tokens", "must be > model.seq_len + 1 (" + std::to_string(seq + 1) +
                                     ") to hold one training window, got " +
                                     std::to_string(d.corpus_tokens), "model.seq_len");
    if (ok({"data.branching", "model.vocab_size"}) && d.branching >= 1 && vocab >= 2 && d.branching > vocab)
      fail("data.branching", "must be <= model.vocab_size (" + std::to_string(vocab) + "), got " +
                                 std::to_string(d.branching), "model.vocab_size");
    check_synthetic_size();
    return;
  }
  if (ok({"data.path"})) {
    if (d.path.empty()) fail("data.path", "required when " + src, "data.source");
    else readable_file("data.path", d.path, "data.source");
  }
  if (ok({"data.val_path"}) && !d.val_path.empty()) readable_file("data.val_path", d.val_path, "data.source");
  if (!ok({"model.vocab_size"}) || vocab < 2) return;
  if (d.source == DataSource::text && vocab != 256)
    fail("model.vocab_size", "must be 256 for " + src + " (byte-level tokens), got " + std::to_string(vocab),
         "data.source");
  if (d.source == DataSource::bin && vocab > 65536)
    fail("model.vocab_size", "must be <= 65536 for " + src + " (uint16 tokens), got " + std::to_string(vocab),
         "data.source");
}

// The synthetic corpus every rank generates, within the bounds of config.h (docs/limits.md
// "Sizes, memory and time"), each refusal saying the memory per rank it would take.
void Checker::check_synthetic_size() {
  const DataConfig& d = c_.data;
  const int vocab = c_.model.vocab_size;
  auto gib = [](double bytes) { return number_text(std::round(bytes / (1 << 30) * 10) / 10) + " GiB"; };
  if (ok({"data.corpus_tokens"}) && d.corpus_tokens > kMaxCorpusTokens)
    fail("data.corpus_tokens", "must be <= " + std::to_string(kMaxCorpusTokens) + " (2^28 tokens, 1 GiB per rank), got " +
                                   std::to_string(d.corpus_tokens) + " (" + gib(4.0 * (double)d.corpus_tokens) +
                                   " per rank)");
  if (ok({"data.branching"}) && d.branching > kMaxBranching)
    fail("data.branching", "must be <= " + std::to_string(kMaxBranching) + ", got " + std::to_string(d.branching));
  else if (ok({"data.languages", "data.branching", "model.vocab_size"}) && d.languages >= 1 && d.branching >= 1 &&
           vocab >= 2 && synthetic_table_entries(d, vocab) > (double)kMaxSyntheticTableEntries) {
    const double entries = synthetic_table_entries(d, vocab);
    fail("data.languages", "data.languages x model.vocab_size x data.branching = " + std::to_string(d.languages) +
                               " x " + std::to_string(vocab) + " x " + std::to_string(std::min(d.branching, vocab)) +
                               " = " + number_text(entries) + " entries of the synthetic languages' tables (" +
                               gib(8 * entries) + " per rank); the limit is " +
                               std::to_string(kMaxSyntheticTableEntries) + " (2^26, 512 MiB): lower data.languages or "
                               "model.vocab_size");
  }
}

void Checker::check_train() {
  const auto& t = c_.train;
  at_least("train.steps", t.steps, 1);
  at_least("train.batch_size", t.batch_size, 1);
  positive("train.lr", t.lr);
  unit("train.min_lr_ratio", t.min_lr_ratio, /*closed=*/true);
  at_least("train.warmup_steps", t.warmup_steps, 0);
  non_negative("train.weight_decay", t.weight_decay);
  unit("train.beta1", t.beta1);
  unit("train.beta2", t.beta2);
  positive("train.eps", t.eps);
  non_negative("train.grad_clip", t.grad_clip, " (0 = off)");
  at_least("train.eval_every", t.eval_every, 0, " (0 = only at the end)");
  at_least("train.eval_batches", t.eval_batches, 1);
  at_least("train.checkpoint_every", t.checkpoint_every, 0, " (0 = only at the end)");
}

void validate(Config& c, LoadState& st) { Checker(c, st).run(); }

// [emulate]: time_scale "auto" or > 0; the cluster file read on its own, naming every link its
// devices use, one device per rank and the nodes of the run's topology (so the traffic classes
// and node-aware strategies agree with the links the messages are paced over).
void Checker::check_emulate() {
  const EmulateConfig& e = c_.emulate;
  if (ok({"emulate.time_scale"}) && e.time_scale != "auto") {
    const auto v = auto_or_number_value(e.time_scale);
    if (!v) fail("emulate.time_scale", "must be \"auto\" or a number > 0, got \"" + excerpt(e.time_scale) + "\"");
    else if (!(std::isfinite(*v) && *v > 0)) fail("emulate.time_scale", "must be \"auto\" or a number > 0, got " + number_text(*v));
    else if (*v < kMinTimeScale || *v > kMaxTimeScale)
      fail("emulate.time_scale", "must be \"auto\" or a number from " + number_text(kMinTimeScale) + " to " +
                                     number_text(kMaxTimeScale) + " (the emulated cluster at most 1000 times faster "
                                     "or a million times slower than described), got " + number_text(*v));
  }
  if (!ok({"emulate.cluster"})) return;
  if (e.cluster.empty()) {
    if (e.time_scale != "auto")  // (the default is written by config_to_toml: fine without a cluster)
      fail("emulate.time_scale", "needs emulate.cluster (the cluster file whose links the messages are paced over)");
    return;
  }
  ClusterConfig k;
  try {
    k = load_cluster_file(e.cluster);
  } catch (const ConfigError& err) {
    for (ConfigIssue issue : err.issues()) {
      if (issue.line == 0 && issue.key.empty()) {  // not found, unreadable: said at emulate.cluster
        fail("emulate.cluster", issue.message);
      } else {
        issue.message += " (the cluster of emulate.cluster)";
        st_.add(std::move(issue));
      }
    }
    return;
  }
  const std::vector<std::string> missing = missing_cluster_links(e.cluster, k);
  if (!missing.empty()) {
    std::string keys;
    for (const std::string& m : missing) keys += (keys.empty() ? "" : ", ") + m;
    fail("emulate.cluster", e.cluster + ": missing " + keys + " (a cluster to emulate names every link its devices use)");
    return;
  }
  if (!ok({"run.ranks", "cluster.nodes"})) return;
  const int ranks = c_.run.ranks;
  const int per_node = k.devices_per_node > 0 ? k.devices_per_node : (ranks % k.nodes == 0 ? ranks / k.nodes : 0);
  if ((int64_t)k.nodes * per_node != ranks) {
    fail("emulate.cluster", e.cluster + " describes " + std::to_string(k.nodes) + " nodes x " +
                                (k.devices_per_node > 0 ? std::to_string(k.devices_per_node) : std::string("?")) +
                                " devices; the run has run.ranks = " + std::to_string(ranks) +
                                " (one rank per emulated device)");
    return;
  }
  if (k.nodes != c_.cluster.nodes)
    fail("emulate.cluster", e.cluster + " has " + std::to_string(k.nodes) + " nodes; the run's topology has cluster.nodes = " +
                                std::to_string(c_.cluster.nodes) + ": set cluster.nodes = " + std::to_string(k.nodes) +
                                " (or cluster.file to the same file) so traffic classes and strategies see the emulated nodes");
}

void validate_cluster(Config& c, LoadState& st) { Checker(c, st).check_cluster(); }

}  // namespace moebench::config_detail

// monta: MoNTA's AllToAll under tensor parallelism (monta.txt, "Pipelining", Fig. 4-9, 15).
// Every rank of a TP group holds the same tokens and routes them alike, so expert_centric's
// all-to-all over each TP rank's EP group carries the same rows t times. MoNTA keeps the
// expert-centric exchange (TokenExchange: pack, dispatch, experts, combine) and changes how
// rows cross the EP group (add_transfer), for the dispatch and the combine, forward and
// backward alike:
//   Drop       each transfer's rows s -> d are cut into N x t pieces (N chunks along the rows,
//              t TP parts per chunk); TP rank u sends only the pieces (j, u): 1/t of the volume;
//   AllToAll   chunk j's pieces over the EP group (task <transfer>, the EP group's role:
//              comm.inter when it spans nodes), received source-major into a staging buffer;
//   AllGather  the TP group's staging buffers, padded to the longest (task <transfer>.allgather,
//              the TP group's role: comm.intra on a node), so every TP rank has every piece;
//   copy       the pieces back to the rows' places in the receive buffer (task <transfer>.copy,
//              Fig. 8 step 3).
// Levels: O1 = one chunk, copy after the AllGather on its stream; O2 = N chunks, chunk j's
// AllGather beside chunk j+1's AllToAll (Fig. 6-7), the copy still on the AllGather's stream;
// O3 = O2 with the copies on the copy stream, beside the next chunk's AllGather (Fig. 9, the
// four streams of Fig. 15). The experts start once every chunk's copy is done (Fig. 15).
// Sliced experts (moe.expert_tp, MoNTA's setting: each expert split over the TP group) return
// partial sums: before the combine's AllToAll a reduce-scatter over the TP group sums each TP
// rank's pieces (task <transfer>.reduce_scatter after a pack), so the block's output leaves
// whole and needs no moe.allreduce (sums_slices). Level baseline, or tp = 1: expert_centric's
// all-to-all-v. The level and chunks come from [strategy.monta]; "auto" asks the cost model
// (perf/monta_model.h) on the cluster this run assumes.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cost_support.h"
#include "moebench/config/config.h"
#include "moebench/config/config_layout.h"
#include "moebench/dist/communicator.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/monta.h"
#include "moebench/strategies/strategy_descriptor.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

// The rows of piece q of a run of n rows cut into `parts`: [n*q/parts, n*(q+1)/parts).
long piece_lo(long n, long q, long parts) { return n * q / parts; }
long piece_rows(long n, long q, long parts) { return piece_lo(n, q + 1, parts) - piece_lo(n, q, parts); }

// Buffers of one chunk of one transfer, in the block's memory (MoeContext::row_ops; the graph's
// actions point into them).
struct ChunkBuffers {
  RowArray pack, reduced, stage, gathered;
};

// A handle's plan and buffers.
struct MontaState : TransferState {
  MontaPlan plan;
  std::vector<std::unique_ptr<ChunkBuffers>> buffers;
};

class Monta : public TokenExchangeOf<MontaState> {
 public:
  explicit Monta(const MontaOptions& options) : TokenExchangeOf(1), options_(options) {}
  std::string name() const override { return "monta"; }
  bool comm_priority() const override { return options_.ep_priority; }
  // With tp > 1 every level but baseline drops (auto too: Algorithm 3 never picks the baseline).
  bool sums_slices(const MoeContext& ctx) const override {
    return ctx.experts_sliced && ctx.tp_size > 1 && options_.level != "baseline";
  }

  // Predicted, balanced routing (as expert_centric's): the EP exchange carries 1/t of the rows
  // (Drop), the TP group's AllGather restores them; comm_seconds as the level's schedule
  // (perf/monta_model.h: O1 eq. 11, O2 / O3 Algorithms 1-2 at the level's chunks) with the
  // links' own efficiency (latency + bytes / bandwidth), dispatch and combine.
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override {
    const int L = cost::experts_per_rank(ctx), P = (int)ctx.ep_world.size(), t = std::max(1, ctx.tp_size);
    const double I = in.tokens * in.top_k * ctx.C * ctx.wire_element_bytes;
    const MontaPlan plan = resolve_monta_plan(options_, ctx, I, &cluster);
    const bool drop = plan.level != MontaLevel::baseline && t > 1;
    const double rows = in.tokens * in.top_k, row_bytes = (double)ctx.C * ctx.wire_element_bytes;
    std::vector<cost::RankCost> ranks(P);
    for (int i = 0; i < P; ++i) {
      std::vector<cost::Flow> flows;
      for (int j = 0; j < P; ++j)
        if (j != i) flows.push_back({ctx.ep_world[j], 2.0 * rows / P * row_bytes / (drop ? t : 1), 2.0 * (drop ? plan.chunks : 1)});
      ranks[i].bytes = cost::flow_bytes(cluster, ctx.ep_world[i], flows);
      ranks[i].comm_seconds = cost::flow_seconds(cluster, ctx.ep_world[i], flows, ctx.ep_world);
      if (drop) {
        ranks[i].comm_seconds = 2.0 * monta_seconds(monta_inputs(cluster, ctx, I), plan.level, plan.chunks);
        const double tp_bytes = 2.0 * rows * row_bytes * (t - 1) / t;  // the AllGathers, dispatch and combine
        const int next = ctx.tp_world.empty() ? ctx.ep_world[i] : ctx.tp_world[(size_t)(ctx.tp_rank + 1) % t];
        const LinkBytes tp = cost::flow_bytes(cluster, ctx.ep_world[i], {{next, tp_bytes, 1.0}});
        ranks[i].bytes.intra += tp.intra;
        ranks[i].bytes.inter += tp.inter;
      }
      ranks[i].compute_seconds = cost::experts_seconds(cluster, (double)L, P * rows / ctx.experts, ctx.C, ctx.F);
    }
    return cost::summarize(cluster, ctx.ep_world, ranks);
  }

 protected:
  // The plan from the volume I of one AllToAll (eq. 3): the EP group's mean slot rows per rank.
  // Every rank of the EP group and of the TP group holds the same counts matrix, so all of them
  // choose the same level and chunks (their collectives must match); one rank's own rows would not.
  std::unique_ptr<MontaState> make_state(const ExchangeCounts& counts, MoeContext& ctx) override {
    double rows = 0;
    for (long n : counts.rows) rows += (double)n;
    rows /= std::max(1, counts.P);
    auto state = std::make_unique<MontaState>();
    state->plan = resolve_monta_plan(options_, ctx, rows * ctx.C * ctx.wire_element_bytes, ctx.cluster);
    return state;
  }

  // Level as 0 baseline, 1 O1, 2 O2, 3 O3 (MontaLevel's order).
  std::vector<StrategyDecision> decisions_of(const MontaState& state) const override {
    const MontaPlan& plan = state.plan;
    return {{"monta.level", (double)(int)plan.level}, {"monta.chunks", (double)plan.chunks}};
  }

  TaskId add_state_transfer(TaskGraph& g, const TransferSpec& t, MontaState& state, const std::vector<TaskId>& after,
                            MoeContext& ctx) override {
    const MontaPlan plan = state.plan;
    if (plan.level == MontaLevel::baseline || ctx.tp_size == 1) return add_all_to_all_v(g, t, after, ctx);
    const int P = ctx.ep_size, T = ctx.tp_size, u = ctx.tp_rank, N = plan.chunks;
    const long parts = (long)N * T;
    const size_t C = (size_t)t.C;
    const uint64_t row_bytes = C * (uint64_t)ctx.wire_element_bytes;
    const StreamRole ep_role = ctx.ep_role(), tp_role = ctx.role_over(ctx.tp_world);
    const StreamRole copy_role = plan.level == MontaLevel::O3 ? StreamRole::copy : tp_role;
    const int next_tp = ctx.tp_world[(size_t)(u + 1) % T];
    std::vector<long> sdisp(P + 1, 0), rdisp(P + 1, 0);
    for (int p = 0; p < P; ++p) {
      sdisp[p + 1] = sdisp[p] + t.send_rows[p];
      rdisp[p + 1] = rdisp[p] + t.recv_rows[p];
    }
    auto task = [&](std::string name, TaskCategory category, StreamRole role, int j) {
      GraphTask x;
      x.name = std::move(name);
      x.category = category;
      x.role = role;
      x.layer = t.layer;
      x.chunk = N > 1 ? j : t.chunk;
      return x;
    };
    const std::string base = t.name;
    RowOps& ops = ctx.row_ops();
    TaskId prev_aa, prev_ag, prev_copy, prev_rs;
    for (int j = 0; j < N; ++j) {
      ChunkBuffers* buf = nullptr;
      if (t.act) {
        state.buffers.push_back(std::make_unique<ChunkBuffers>());
        buf = state.buffers.back().get();
      }
      // What TP part v of this chunk sends: pieces (j, v) of every destination's run.
      auto sent_by = [&](int v) {
        long n = 0;
        for (int d = 0; d < P; ++d) n += piece_rows(t.send_rows[d], (long)j * T + v, parts);
        return n;
      };
      std::vector<TaskId> aa_after = after;
      if (prev_aa.valid()) aa_after.push_back(prev_aa);
      const float* send = t.send;
      std::vector<size_t> sc(P), sd(P);
      for (int d = 0; d < P; ++d) {
        const long q = (long)j * T + u;
        sc[d] = (size_t)piece_rows(t.send_rows[d], q, parts) * C;
        sd[d] = (size_t)(sdisp[d] + piece_lo(t.send_rows[d], q, parts)) * C;
      }
      if (t.partial) {
        // Sum the TP ranks' partial rows: pack pieces (j, v) as block v, reduce-scatter.
        long block = 0;
        for (int v = 0; v < T; ++v) block = std::max(block, sent_by(v));
        GraphTask pack = task(base + ".pack", TaskCategory::copy, tp_role, j);
        pack.cost.copy_bytes = (uint64_t)T * block * row_bytes;
        pack.cost.device_copy = true;
        GraphTask rs = task(base + ".reduce_scatter", TaskCategory::comm, tp_role, j);
        rs.cost.bytes_to_peer.push_back({next_tp, (uint64_t)(T - 1) * block * row_bytes});
        rs.cost.messages = T - 1;  // a ring: t - 1 blocks forwarded and added
        if (t.act) {
          buf->pack.resize(ops, (long)(T * block * C));
          buf->reduced.resize(ops, (long)(block * C));
          pack.action = [buf, &ops, send, rows = t.send_rows, sdisp, j, T, P, parts, block, C] {
            ops.zero(buf->pack.data(), (long)(T * block * C));  // padding rows: zero
            for (int v = 0; v < T; ++v) {
              float* dst = buf->pack.data() + (size_t)v * block * C;
              for (int d = 0; d < P; ++d) {
                const long q = (long)j * T + v, n = piece_rows(rows[d], q, parts);
                if (n) ops.copy(dst, send + (size_t)(sdisp[d] + piece_lo(rows[d], q, parts)) * C, n * (long)C);
                dst += (size_t)n * C;
              }
            }
          };
          Communicator* tp = &ctx.tp_rows_comm(tp_role);
          rs.action = [buf, tp, block, C] {
            if (block) tp->reduce_scatter(buf->pack.data(), buf->reduced.data(), (size_t)block * C, DType::f32);
          };
          send = buf->reduced.data();
          size_t at = 0;  // the AllToAll now sends from this rank's reduced block
          for (int d = 0; d < P; ++d) {
            sd[d] = at;
            at += sc[d];
          }
        }
        std::vector<TaskId> pack_after = after;
        if (prev_rs.valid()) pack_after.push_back(prev_rs);
        const TaskId packed = g.add(std::move(pack), pack_after);
        prev_rs = g.add(std::move(rs), {packed});
        aa_after.push_back(prev_rs);
      }

      // AllToAll of pieces (j, u) over the EP group, into the staging buffer (source-major).
      std::vector<long> got(T, 0);  // rows TP part v receives in this chunk
      for (int v = 0; v < T; ++v)
        for (int s = 0; s < P; ++s) got[v] += piece_rows(t.recv_rows[s], (long)j * T + v, parts);
      const long stage_rows = *std::max_element(got.begin(), got.end());
      GraphTask aa = task(base, TaskCategory::comm, ep_role, j);
      for (int d = 0; d < P; ++d)
        if (d != ctx.ep_rank && sc[d] > 0) aa.cost.bytes_to_peer.push_back({ctx.ep_world[d], (uint64_t)sc[d] * (uint64_t)ctx.wire_element_bytes});
      if (t.act) {
        std::vector<size_t> rc(P), rd(P);
        size_t at = 0;
        for (int s = 0; s < P; ++s) {
          rc[s] = (size_t)piece_rows(t.recv_rows[s], (long)j * T + u, parts) * C;
          rd[s] = at;
          at += rc[s];
        }
        buf->stage.resize(ops, (long)(stage_rows * C));
        Communicator* ep = &ctx.rows_comm(ep_role);
        aa.action = [buf, &ops, ep, send, sc, sd, rc, rd, stage_rows, C] {
          ops.zero(buf->stage.data(), (long)(stage_rows * C));  // padding rows: zero
          ep->all_to_all_v(send, sc.data(), sd.data(), buf->stage.data(), rc.data(), rd.data(), DType::f32);
        };
      }
      prev_aa = g.add(std::move(aa), aa_after);

      // AllGather of the staging buffers over the TP group (padded to the longest).
      GraphTask ag = task(base + ".allgather", TaskCategory::comm, tp_role, j);
      ag.cost.bytes_to_peer.push_back({next_tp, (uint64_t)(T - 1) * stage_rows * row_bytes});
      ag.cost.messages = T - 1;  // a ring: t - 1 blocks forwarded
      if (t.act) {
        buf->gathered.resize(ops, (long)(T * stage_rows * C));
        Communicator* tp = &ctx.tp_rows_comm(tp_role);
        ag.action = [buf, tp, stage_rows, C] {
          if (stage_rows) tp->all_gather(buf->stage.data(), buf->gathered.data(), (size_t)stage_rows * C, DType::f32);
        };
      }
      std::vector<TaskId> ag_after = {prev_aa};
      if (prev_ag.valid()) ag_after.push_back(prev_ag);
      if (copy_role == tp_role && prev_copy.valid()) ag_after.push_back(prev_copy);  // O1 / O2: one stream
      prev_ag = g.add(std::move(ag), ag_after);

      // The copy that puts every piece (j, v) at its rows' place in the receive buffer.
      GraphTask cp = task(base + ".copy", TaskCategory::copy, copy_role, j);
      long chunk_rows = 0;
      for (long n : got) chunk_rows += n;
      cp.cost.copy_bytes = (uint64_t)chunk_rows * row_bytes;
      cp.cost.device_copy = true;
      if (t.act) {
        float* recv = t.recv;
        cp.action = [buf, &ops, recv, rows = t.recv_rows, rdisp, j, T, P, parts, stage_rows, C] {
          for (int v = 0; v < T; ++v) {
            const float* src = buf->gathered.data() + (size_t)v * stage_rows * C;
            for (int s = 0; s < P; ++s) {
              const long q = (long)j * T + v, n = piece_rows(rows[s], q, parts);
              if (n) ops.copy(recv + (size_t)(rdisp[s] + piece_lo(rows[s], q, parts)) * C, src, n * (long)C);
              src += (size_t)n * C;
            }
          }
        };
      }
      std::vector<TaskId> cp_after = {prev_ag};
      if (prev_copy.valid()) cp_after.push_back(prev_copy);
      prev_copy = g.add(std::move(cp), cp_after);
    }
    return prev_copy;
  }

 private:
  MontaOptions options_;
};

}  // namespace

MontaInputs monta_inputs(const ClusterModel& cluster, const MoeContext& ctx, double I) {
  auto link_of = [&](const std::vector<int>& world) {
    bool spans = false;
    for (int w : world) spans = spans || cluster.node_of(w) != cluster.node_of(world.front());
    LinkSpec l = cluster.link(spans ? ClusterLink::inter_node : ClusterLink::intra_node);
    if (spans) l.bandwidth = cluster.inter_bandwidth_per_device();
    return l;
  };
  // A measured busbw curve as efficiencies of bandwidth B (raised to the best measured rate when
  // the link is faster than described, so that r <= 1 and B r is what was measured).
  auto measured = [](const std::vector<std::pair<double, double>>& busbw, double& B) {
    for (const auto& [bytes, bw] : busbw) B = std::max(B, bw);
    std::vector<std::pair<double, double>> points;
    for (const auto& [bytes, bw] : busbw) points.push_back({bytes, bw / B});
    return efficiency_curve(points);
  };
  const ClusterSpec& spec = cluster.spec();
  MontaInputs in;
  in.I = I;
  in.t = std::max(1, ctx.tp_size);
  in.e = std::max(1, ctx.ep_size);
  const LinkSpec ep = ctx.ep_world.empty() ? cluster.link(ClusterLink::intra_node) : link_of(ctx.ep_world);
  const LinkSpec tp = ctx.tp_world.empty() ? cluster.link(ClusterLink::intra_node) : link_of(ctx.tp_world);
  in.B1 = ep.bandwidth;
  in.B2 = tp.bandwidth;
  in.B3 = spec.d2d_bandwidth > 0 ? spec.d2d_bandwidth : spec.copy_bandwidth;
  in.r3 = [](double) { return 1.0; };
  if (!spec.alltoall_busbw.empty()) {
    in.r1 = measured(spec.alltoall_busbw, in.B1);
    in.I_minimal = spec.alltoall_busbw.front().first;  // nothing measured below: no chunk goes there
  } else {
    in.r1 = link_efficiency(in.B1, ep.latency, in.e - 1, (in.e - 1.0) / in.e);
    in.I_minimal = in.e * ep.latency * in.B1;  // the volume at 50 % efficiency
  }
  in.r2 = spec.allgather_busbw.empty() ? link_efficiency(in.B2, tp.latency, in.t - 1, (in.t - 1.0) / in.t)
                                       : measured(spec.allgather_busbw, in.B2);
  const double rows = ctx.C > 0 ? I / ((double)ctx.C * ctx.wire_element_bytes) : 1.0;
  in.max_chunks = (int)std::clamp(rows / in.t, 1.0, 65536.0);
  return in;
}

std::vector<MontaBlockChoice> monta_block_choices(const Config& cfg, const ClusterModel& cluster) {
  const ParallelLayout layout = layout_of(cfg);
  if (layout.world() != cluster.world_size())
    throw std::invalid_argument("monta: the cluster's " + std::to_string(cluster.world_size()) +
                                " devices are not the layout's " + layout.describe());
  MoeContext ctx;  // rank 0's groups
  ctx.C = cfg.model.hidden;
  ctx.tp_size = layout.tp();
  ctx.ep_size = layout.ep();
  ctx.tp_world = layout.tp_group(0);
  ctx.ep_world = layout.ep_group(0);
  ctx.wire_element_bytes = cluster.wire_element_bytes();  // a prediction: the cluster's workload
  const double tokens =
      (double)cfg.train.batch_size / layout.dp() / std::max(1, cfg.parallel.microbatches) * cfg.model.seq_len;
  const double I = tokens * cfg.moe.top_k * cfg.model.hidden * ctx.wire_element_bytes;
  std::vector<MontaBlockChoice> out;
  for (int block : cfg.moe.moe_layers) {
    const MontaInputs in = monta_inputs(cluster, ctx, I);
    MontaBlockChoice c;
    c.block = block;
    c.I = I;
    c.baseline = monta_seconds(in, MontaLevel::baseline);
    c.O1 = monta_seconds(in, MontaLevel::O1);
    if (MontaOptions::of(cfg.strategy).chunks == "auto") {
      c.O2 = monta_best_chunks(in, MontaLevel::O2);
      c.O3 = monta_best_chunks(in, MontaLevel::O3);
      c.chosen = monta_select(in);
    } else {  // the chunks set: Algorithm 3 over O1 and O2 / O3 at N
      const int N = std::stoi(MontaOptions::of(cfg.strategy).chunks);
      c.O2 = {MontaLevel::O2, N, monta_seconds(in, MontaLevel::O2, N)};
      c.O3 = {MontaLevel::O3, N, monta_seconds(in, MontaLevel::O3, N)};
      c.chosen = monta_select(in, N);
    }
    c.bound = monta_speedup_bound(in);
    c.measured_r1 = !cluster.spec().alltoall_busbw.empty();
    c.measured_r2 = !cluster.spec().allgather_busbw.empty();
    out.push_back(c);
  }
  return out;
}

MontaPlan resolve_monta_plan(const MontaOptions& options, const MoeContext& ctx, double I, const ClusterModel* cluster) {
  MontaPlan plan;
  if (ctx.tp_size <= 1 || options.level == "baseline") return {MontaLevel::baseline, 1};
  const bool auto_level = options.level == "auto", auto_chunks = options.chunks == "auto";
  if ((auto_level || auto_chunks) && !cluster)
    throw std::invalid_argument("monta: level or chunks \"auto\" needs the cluster model the run assumes");
  if (auto_level && auto_chunks) {
    const MontaChoice c = monta_select(monta_inputs(*cluster, ctx, I));
    plan = {c.level, c.chunks};
  } else if (auto_level) {  // Algorithm 3 over O1 and O2 / O3 at the chunks set
    const MontaChoice c = monta_select(monta_inputs(*cluster, ctx, I), std::stoi(options.chunks));
    plan = {c.level, c.chunks};
  } else {
    plan.level = monta_level_from_name(options.level);
  }
  if (plan.level == MontaLevel::O1) {
    plan.chunks = 1;
  } else if (!auto_chunks) {
    plan.chunks = std::stoi(options.chunks);
  } else if (!auto_level) {  // Algorithm 1 / 2 at the level set
    plan.chunks = monta_best_chunks(monta_inputs(*cluster, ctx, I), plan.level).chunks;
  }
  if (plan.chunks < 1) throw std::invalid_argument("monta: chunks must be >= 1, got " + options.chunks);
  return plan;
}

MontaOptions MontaOptions::of(const StrategyConfig& s) {
  return {s.option("monta.level").s, s.option("monta.chunks").s, s.option("monta.ep_priority").b};
}

namespace {

// [strategy.monta]: chunks "auto" or a whole number in [1, the tokens of a rank] (chunks cut the
// sequence); a level that drops rows needs tensor parallelism (tp = 1 leaves nothing redundant
// to drop). The level's values are the option's one_of.
void check_monta(StrategyCheck& check) {
  const Config& c = check.config();
  const MontaOptions m = MontaOptions::of(c.strategy);
  if (check.ok({"strategy.monta.chunks"}) && m.chunks != "auto") {
    double v = 0;
    const char* end = m.chunks.data() + m.chunks.size();
    const auto res = std::from_chars(m.chunks.data(), end, v);
    const bool number = !m.chunks.empty() && res.ec == std::errc() && res.ptr == end;
    if (!number || !(v >= 1) || v != std::floor(v) || v > 1e9)
      check.fail("strategy.monta.chunks", "must be \"auto\" or a whole number >= 1, got \"" + m.chunks.substr(0, 48) + "\"");
    else if (check.ok({"train.batch_size", "model.seq_len"}) && check.tokens > 0 && v > (double)check.tokens)
      check.fail("strategy.monta.chunks", "must be at most the " + std::to_string(check.tokens) + " tokens of a rank (" +
                                              check.tokens_text + " x model.seq_len), got " + m.chunks);
  }
  if (check.ok({"strategy.name", "strategy.monta.level", "parallel.tp"}) && c.strategy.name == "monta" &&
      c.parallel.tp == 1 && m.level != "baseline" && m.level != "auto")
    check.fail("strategy.monta.level", m.level + " drops the rows the tensor-parallel ranks hold alike, but parallel.tp = 1 "
                                       "(nothing to drop); use level = \"baseline\" or parallel.tp > 1",
               "parallel.tp");
  // The MoE blocks of a rank share their communicators, so their comm tasks are all on the
  // priority lanes or none (moe/block_graph.h check_comm_priority): a chooser that mixes monta
  // with other strategies cannot give ep_priority to the monta blocks only.
  if (check.ok({"strategy.monta.ep_priority", "strategy.name"}) && m.ep_priority)
    for (const std::string& n : block_strategy_names(c.strategy))
      if (n != "monta") {
        check.fail("strategy.monta.ep_priority", "puts every MoE block of a rank on the priority lanes (the blocks "
                                                 "share their communicators), but strategy.name = \"" + c.strategy.name +
                                                 "\" runs " + n + " blocks too: set it false, or run monta on every block",
                   "strategy.name");
        break;
      }
}

}  // namespace

StrategyDescriptor monta_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "monta";
  d.spec.summary = "MoNTA: the expert-parallel AllToAll under tensor parallelism, dropped and pipelined with AllGathers";
  d.spec.options = {
      string_option("level", "auto",
                    "MoNTA level: baseline | O1 (drop + AllToAll + AllGather) | O2 (+ chunks pipelined) | O3 (+ copy "
                    "pipelined) | auto",
                    {"baseline", "O1", "O2", "O3", "auto"}),
      auto_or_number_option("chunks", "auto", "chunks N of O2 / O3 (>= 1), or \"auto\" (the cost model's best N)"),
      bool_option("ep_priority", false,
                  "every MoE block's comm tasks on their roles' priority lanes: the EP AllToAll never waits behind DP "
                  "buckets or PP sends")};
  d.spec.per_block_member = true;
  d.spec.sums_slices = true;
  d.spec.check = check_monta;
  d.make = [](const StrategyConfig& s) -> std::unique_ptr<MoeStrategy> {
    return std::make_unique<Monta>(MontaOptions::of(s));
  };
  // Tensor parallelism only: the cost model's choice, and each level with its best chunks.
  d.candidates = [](const Config&) {
    std::vector<PlannerCandidate> out;
    for (const char* level : {"auto", "O1", "O2", "O3"})
      out.push_back({std::string("monta ") + level, [level](StrategyConfig& s) {
                       s.option("monta.level").s = level;
                       s.option("monta.chunks").s = "auto";
                     }});
    return out;
  };
  d.inapplicable = [](const Config& c) -> std::string {
    return std::max(1, c.parallel.tp) == 1 ? "parallel.tp = 1: no tensor-parallel redundancy to drop" : "";
  };
  d.plan_json = [](const Config& c, const ClusterModel& cluster) {
    return c.parallel.tp > 1 ? monta_plan_json(c, cluster) : nlohmann::json();
  };
  d.plan_text = [](const Config& c, const ClusterModel& cluster) {
    return c.parallel.tp > 1 ? monta_plan_text(c, cluster) : std::string();
  };
  // Under tensor parallelism: each level, O2 / O3 at the config's chunks (4 for "auto").
  d.overlap_variants = [](const Config& c, int tp, int) {
    std::vector<BenchVariant> out;
    if (tp == 1) return out;
    const std::string chunks = MontaOptions::of(c.strategy).chunks;
    const int N = chunks == "auto" ? 4 : std::stoi(chunks);
    for (const char* level : {"baseline", "O1", "O2", "O3"}) {
      const int n = std::string(level) == "O2" || std::string(level) == "O3" ? N : 1;
      out.push_back({std::string("monta ") + level + (n > 1 ? " N=" + std::to_string(n) : ""),
                     [level, n](StrategyConfig& s) {
                       s.option("monta.level").s = level;
                       s.option("monta.chunks").s = std::to_string(n);
                     },
                     n == 1});
    }
    return out;
  };
  d.reads_comm_curves = [](const Config& c) {
    const MontaOptions m = MontaOptions::of(c.strategy);
    return std::max(1, c.parallel.tp) > 1 && (m.level == "auto" || m.chunks == "auto");
  };
  return d;
}

}  // namespace moebench

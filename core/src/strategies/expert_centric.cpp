// expert_centric: GShard / DeepSpeed-MoE expert parallelism. Tokens go to the rank owning
// their expert with one all-to-all-v over the EP group, outputs come back with another
// (FasterMoE §2.3, Fig. 3); with overlap_degree D (Tutel) in D chunks whose exchange overlaps
// the previous chunk's expert compute (strategies/token_exchange.h).
#include <algorithm>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/config/config.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

class ExpertCentric : public TokenExchange {
 public:
  using TokenExchange::TokenExchange;
  std::string name() const override { return "expert_centric"; }

  // Predicted (never measured): with uniform routing each rank sends tokens*k*(P-1)/P rows;
  // of those, (d-1)/(P-1) stay inside the node (d = EP ranks per node). The all-to-all takes
  // as long as its slowest link class, plus one latency per peer.
  StrategyCost predict(const CostInputs& in) const override {
    StrategyCost c;
    const int P = in.ep_size, d = in.devices_per_node;
    const double row = (double)in.hidden * sizeof(float);
    const double out = in.tokens * in.top_k * row * (P - 1) / P;
    if (P > 1) {
      c.bytes_intra = out * (double)(d - 1) / (P - 1);
      c.bytes_inter = out - c.bytes_intra;
    }
    const double t_intra = in.intra_bw > 0 ? c.bytes_intra / in.intra_bw : 0;
    const double t_inter = in.inter_bw > 0 ? c.bytes_inter / in.inter_bw : 0;
    c.comm_seconds = 2.0 * (std::max(t_intra, t_inter) + (P - 1) * in.latency);  // dispatch + combine
    c.compute_seconds = in.flops_rate > 0 ? 4.0 * in.tokens * in.top_k * in.hidden * in.ffn / in.flops_rate : 0;
    return c;
  }

 protected:
  TaskId add_transfer(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after,
                      MoeContext& ctx) override {
    const int P = ctx.ep_size;
    GraphTask task;
    task.name = t.name;
    task.category = TaskCategory::comm;
    task.role = ctx.ep_role();
    task.layer = t.layer;
    task.chunk = t.chunk;
    for (int p = 0; p < P; ++p)
      if (p != ctx.ep_rank && t.send_rows[p] > 0)
        task.cost.bytes_to_peer.push_back({ctx.ep_world[p], (uint64_t)t.send_rows[p] * t.C * sizeof(float)});
    if (t.act) {
      std::vector<size_t> sc(P), sd(P), rc(P), rd(P);
      size_t so = 0, ro = 0;
      for (int p = 0; p < P; ++p) {
        sc[p] = (size_t)t.send_rows[p] * t.C;
        rc[p] = (size_t)t.recv_rows[p] * t.C;
        sd[p] = so;
        rd[p] = ro;
        so += sc[p];
        ro += rc[p];
      }
      Communicator* comm = &ctx.role_comm(task.role);
      const float* send = t.send;
      float* recv = t.recv;
      task.action = [comm, send, recv, sc, sd, rc, rd] {
        comm->all_to_all_v(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), DType::f32);
      };
    }
    return g.add(std::move(task), after);
  }
};

}  // namespace

std::unique_ptr<MoeStrategy> make_expert_centric(const StrategyConfig& options) {
  return std::make_unique<ExpertCentric>(options.expert_centric.overlap_degree);
}

}  // namespace moebench

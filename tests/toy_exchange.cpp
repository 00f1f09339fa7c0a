// toy_exchange: a strategy that lives only in the tests' sources, the proof that a strategy is
// added in one place (issue 31). Its exchange is expert_centric's all-to-all-v, written here on
// the public headers, with one option of its own ([strategy.toy_exchange] chunks); it registers
// itself when this file's object is linked, before any config is loaded.
#include <memory>
#include <string>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/strategies/strategy_descriptor.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench::test {
namespace {

class ToyExchange : public TokenExchange {
 public:
  using TokenExchange::TokenExchange;
  std::string name() const override { return "toy_exchange"; }

  // Balanced routing: every EP rank sends tokens * k / P rows to each other rank and gets as
  // many back; all of it counted as intra-node traffic (a toy's cost model).
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel&) const override {
    const double P = (double)ctx.ep_world.size();
    StrategyCost c;
    c.rank.intra = c.machine.intra = 2.0 * in.tokens * in.top_k * (P - 1) / P * ctx.C * sizeof(float);
    return c;
  }

 protected:
  // One all-to-all-v over the EP group on its role, rows grouped by peer.
  TaskId add_transfer(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after, MoeContext& ctx) override {
    const int P = ctx.ep_size;
    GraphTask task;
    task.name = std::string("toy.") + t.name;
    task.category = TaskCategory::comm;
    task.role = ctx.ep_role();
    task.layer = t.layer;
    task.chunk = t.chunk;
    for (int p = 0; p < P; ++p)
      if (p != ctx.ep_rank && t.send_rows[p] > 0)
        task.cost.bytes_to_peer.push_back({ctx.ep_world[p], (uint64_t)t.send_rows[p] * t.C * sizeof(float)});
    if (t.act) {
      std::vector<size_t> sc(P), sd(P), rc(P), rd(P);
      for (int p = 0; p < P; ++p) {
        sc[p] = (size_t)t.send_rows[p] * t.C;
        rc[p] = (size_t)t.recv_rows[p] * t.C;
        if (p > 0) sd[p] = sd[p - 1] + sc[p - 1], rd[p] = rd[p - 1] + rc[p - 1];
      }
      Communicator* comm = &ctx.role_comm(task.role);
      task.action = [comm, send = t.send, recv = t.recv, sc, sd, rc, rd] {
        comm->all_to_all_v(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), DType::f32);
      };
    }
    return g.add(std::move(task), after);
  }
};

StrategyDescriptor toy_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "toy_exchange";
  d.spec.summary = "a test's strategy: expert_centric's all-to-all-v from its own file";
  d.spec.options = {int_option("chunks", 1, "rows of each expert in this many chunks").at_least(1)};
  d.spec.per_block_member = true;
  d.make = [](const StrategyConfig& s) -> std::unique_ptr<MoeStrategy> {
    return std::make_unique<ToyExchange>(s.option("toy_exchange.chunks").i);
  };
  d.candidates = [](const Config&) { return std::vector<PlannerCandidate>{{"toy_exchange", [](StrategyConfig&) {}}}; };
  return d;
}

const bool registered = (register_strategy(toy_descriptor()), true);

}  // namespace
}  // namespace moebench::test

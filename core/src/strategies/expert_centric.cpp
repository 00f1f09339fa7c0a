// expert_centric: GShard / DeepSpeed-MoE expert parallelism. Tokens go to the rank owning
// their expert with one all-to-all-v over the EP group, outputs come back with another
// (FasterMoE §2.3, Fig. 3).
#include <algorithm>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

class ExpertCentric : public TokenExchange {
 public:
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
  void transfer(const float* send, const std::vector<long>& send_rows, float* recv,
                const std::vector<long>& recv_rows, const std::vector<long>&, int C,
                MoeContext& ctx) override {
    const int P = ctx.ep->size();
    std::vector<size_t> sc(P), sd(P), rc(P), rd(P);
    size_t so = 0, ro = 0;
    for (int p = 0; p < P; ++p) {
      sc[p] = (size_t)send_rows[p] * C;
      rc[p] = (size_t)recv_rows[p] * C;
      sd[p] = so;
      rd[p] = ro;
      so += sc[p];
      ro += rc[p];
    }
    ctx.ep->all_to_all_v(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), DType::f32);
  }
};

}  // namespace

std::unique_ptr<MoeStrategy> make_expert_centric() { return std::make_unique<ExpertCentric>(); }

}  // namespace moebench

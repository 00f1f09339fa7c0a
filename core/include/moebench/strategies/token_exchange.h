#pragma once
// TokenExchange: the expert-centric family (GShard / DeepSpeed / Tutel): tokens travel to the
// rank owning their expert and the outputs travel back; experts never move. Subclasses only
// say how rows cross the EP group (add_transfer): one all-to-all-v (expert_centric) or the
// two-phase hierarchical all-to-all (hier_a2a).
//
// Layout (from the EP group's counts): every (source, expert) row count, cut into D =
// overlap_degree chunks ([strategy.expert_centric] / [strategy.hier_a2a] overlap_degree) (Tutel's overlap degree): chunk i of the n rows a source sends
// to an expert is rows [n*i/D, n*(i+1)/D). Per chunk the graph is
//   pack (copy; D > 1) -> dispatch (comm) -> experts (compute: regroup the received rows,
//   source-major, by local expert; the experts; back) -> combine (comm) -> unpack (copy; D > 1)
// and the comm tasks are queued dispatch 0, dispatch 1, combine 0, dispatch 2, combine 1, ...
// so the exchange of chunk i+1 overlaps the experts of chunk i. Backward moves dy and dx the
// same way; each chunk keeps its own experts' activations, and the owned experts'
// gradients accumulate chunk after chunk on the compute stream (deterministic). D = 1 sends
// straight from xg and receives straight into y (no copies).
// A subclass that keeps state of its own per pass derives from TokenExchangeOf<State> (below),
// which hands it that state typed. The rows live where the block's do (MoeContext::row_ops: host
// memory on the CPU, the GPU's on a device) and every copy, permutation and expert runs there.
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moebench/config/strategy_spec.h"
#include "moebench/moe/typed_strategy.h"

namespace moebench {

// What a subclass keeps per handle (one micro-batch's plan and buffers): made at layout,
// handed to add_transfer in TransferSpec::state, gone with the handle (TokenExchangeOf).
struct TransferState {
  virtual ~TransferState() = default;
};

// One chunk of one pass's exchange. Row counts are fixed by the layout; buffers are sized
// when a graph with buffers is built.
struct ExchangeChunk {
  std::vector<long> rows;                   // [P*P] rows src -> dst
  std::vector<long> send_rows, recv_rows;   // [P]
  std::vector<std::pair<long, long>> pack;  // (first slot row, rows) in send order
  std::vector<int> local_offsets;           // [L+1] received rows per local expert, expert-major
  std::vector<long> recv_index;             // expert-major row -> received (source-major) row
  long S = 0, R = 0;                        // rows sent, rows received
  RowArray send, x_recv, x_exp, y_exp, y_back, y_recv;      // forward
  RowArray d_send, d_recv, d_exp, dx_exp, dx_back, dx_recv;  // backward
  std::unique_ptr<ExpertCompute> bank;
};

// The handle of a TokenExchange pass: its chunks and the subclass's state.
struct ExchangeHandle : MoeHandle {
  int P = 1, E = 0, L = 0, me = 0, C = 0, F = 0, D = 1;
  // Rows travel through pack / unpack copies: several chunks, or rows the chunks leave out
  // (then xg and y are not the send and receive buffers as they stand).
  bool packed = false;
  std::vector<ExchangeChunk> chunks;
  std::unique_ptr<TransferState> state;
  bool have_forward = false;
};

// One chunk's transfer: rows (C floats each) of `send`, grouped by destination EP rank
// (send_rows[d] each), into `recv`, grouped by source (recv_rows[s] each); rows[s * P + d] is
// the chunk's full P x P matrix of row counts (known to every rank). Without actions (a graph
// without buffers) send / recv are null.
struct TransferSpec {
  const char* name = "";
  int layer = -1, chunk = -1, C = 0;
  bool act = false;  // with actions (a graph with buffers)
  // The rows are partial sums over the TP group (the return trip of experts sliced over it,
  // MoeContext::experts_sliced): every TP rank sends its own partials.
  bool partial = false;
  TransferState* state = nullptr;  // the handle's (null when the subclass made none)
  const float* send = nullptr;
  float* recv = nullptr;
  std::vector<long> send_rows, recv_rows, rows;
};

class TokenExchange : public StrategyOf<ExchangeHandle> {
 public:
  // overlap_degree >= 1 (std::invalid_argument otherwise).
  explicit TokenExchange(int overlap_degree = 1);
  int overlap_degree() const { return D_; }

 protected:
  std::unique_ptr<ExchangeHandle> layout_pass(const ExchangeCounts& counts, MoeContext& ctx) override;
  std::vector<TaskId> build_pass(TaskGraph& g, ExchangeHandle& handle, MoePass pass, const std::vector<TaskId>& after,
                                 const MoeBuffers* buffers, MoeContext& ctx) override;
  std::vector<StrategyDecision> pass_decisions(const ExchangeHandle& handle) const override;
  // Appends the transfer's tasks after `after`; returns the task after which recv is complete.
  // Actions only when t.act.
  virtual TaskId add_transfer(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after,
                              MoeContext& ctx) = 0;
  // The transfer as one all-to-all-v over the EP group on its role (expert_centric's, and
  // monta's baseline level).
  static TaskId add_all_to_all_v(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after, MoeContext& ctx);
  // The chunks of a pass (default: the overlap degree D), from the handle's state.
  virtual int chunk_count(const TransferState* state) const {
    (void)state;
    return D_;
  }
  // Rows source s sends to expert e in chunk i of `chunks`: by default the even split of its n =
  // counts.at(s, e) rows, [n i / D, n (i+1) / D). The chunks may leave rows out (fastermoe's
  // shadowed experts): they stay in xg / y for the subclass's own tasks, and every chunk is
  // packed and unpacked then. A source's rows of an expert are taken chunk after chunk in slot order.
  virtual long chunk_rows(const ExchangeCounts& counts, const TransferState* state, int s, int e, int i,
                          int chunks) const;
  // The handle's state for add_transfer, from the pass's counts (default: none).
  virtual std::unique_ptr<TransferState> make_transfer_state(const ExchangeCounts& counts, MoeContext& ctx) {
    (void)counts, (void)ctx;
    return nullptr;
  }
  // The choices kept in a handle's state (default: none).
  virtual std::vector<StrategyDecision> state_decisions(const TransferState& state) const {
    (void)state;
    return {};
  }
  // Collective setup on the main thread before the first graph with buffers (hier_a2a: the
  // node communicators). Default: nothing.
  virtual void prepare(MoeContext& ctx) { (void)ctx; }

 private:
  int D_ = 1;
};

// A TokenExchange whose subclass keeps a State of its own in every handle (monta's plan and
// buffers, fastermoe's shadows): TokenExchange's state hooks over State, and state(handle).
// The one downcast of the state is exact_cast's (moe/typed_strategy.h).
template <class State>
class TokenExchangeOf : public TokenExchange {
 public:
  using TokenExchange::TokenExchange;

 protected:
  State& state(ExchangeHandle& h) const { return own<State>(h.state.get()); }
  const State& state(const ExchangeHandle& h) const { return own<const State>(h.state.get()); }
  // make_transfer_state, chunk_count, chunk_rows, state_decisions and add_transfer on State.
  virtual std::unique_ptr<State> make_state(const ExchangeCounts& counts, MoeContext& ctx) = 0;
  virtual int state_chunks(const State& s) const {
    (void)s;
    return overlap_degree();
  }
  virtual long state_chunk_rows(const ExchangeCounts& counts, const State& s, int src, int e, int i, int chunks) const {
    (void)s;
    return TokenExchange::chunk_rows(counts, nullptr, src, e, i, chunks);
  }
  virtual std::vector<StrategyDecision> decisions_of(const State& s) const {
    (void)s;
    return {};
  }
  virtual TaskId add_state_transfer(TaskGraph& g, const TransferSpec& t, State& s, const std::vector<TaskId>& after,
                                    MoeContext& ctx) = 0;

 private:
  std::unique_ptr<TransferState> make_transfer_state(const ExchangeCounts& counts, MoeContext& ctx) final {
    std::unique_ptr<State> s = make_state(counts, ctx);
    if (!s) throw std::logic_error(name() + ": made no state for a pass");
    return s;
  }
  int chunk_count(const TransferState* s) const final { return state_chunks(own<const State>(s)); }
  long chunk_rows(const ExchangeCounts& counts, const TransferState* s, int src, int e, int i, int chunks) const final {
    return state_chunk_rows(counts, own<const State>(s), src, e, i, chunks);
  }
  std::vector<StrategyDecision> state_decisions(const TransferState& s) const final {
    return decisions_of(own<const State>(&s));
  }
  TaskId add_transfer(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after, MoeContext& ctx) final {
    return add_state_transfer(g, t, own<State>(t.state), after, ctx);
  }
  // A pass's state as this strategy's State (S: State or const State), else std::logic_error.
  template <class S, class T>
  S& own(T* s) const {
    if (!s) throw std::logic_error(name() + ": a pass without its state (a handle of another strategy)");
    return exact_cast<S>(*s, name());
  }
};

// overlap_degree of [strategy.expert_centric] / [strategy.hier_a2a]: the option (>= 1), its rule
// (at most the tokens of a rank, else chunks stay empty) and the planner's reason to skip a
// candidate with more ("" when it can run).
OptionDef overlap_degree_option(const std::string& doc);
void check_overlap_degree(StrategyCheck& check, const std::string& section);
std::string overlap_degree_inapplicable(const Config& c, int degree);

}  // namespace moebench

#include "moebench/perf/simulator.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace moebench {
namespace {

// A send task's identity across ranks: name, layer, expert, chunk and occurrence of those.
struct Key {
  int name = 0, layer = 0, expert = 0, chunk = 0, occurrence = 0;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int v : {k.name, k.layer, k.expert, k.chunk, k.occurrence}) h = (h ^ (uint32_t)v) * 1099511628211ull;
    return (size_t)h;
  }
};

struct Parked {
  int rank, task;
  uint64_t bytes;
  int messages;
  double arrival = 0;  // emulated pacing: when all of the sender's flows have arrived
};

struct Event {
  double t;
  uint64_t seq;
  int rank, task;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Rank {
  const TaskGraph* g = nullptr;
  std::vector<int> dep_begin, dependents;  // CSR: tasks waiting for task i
  std::vector<int> next_in_role;           // the next task of i's role (and lane), or -1
  std::vector<int> waiting;                // dependencies + previous of its role not ended
  std::vector<int> match_begin, match;     // per send task, its bytes_to_peer's matching peer task (-1: self)
  std::vector<TaskCostFit> fitted;         // compute tasks: the cluster's fitted cost (empty: none)
  std::vector<int> pending;                // send tasks: transfers (out and in) not reserved yet
  std::vector<int> incoming;               // send tasks: transfers other ranks send to it
  std::vector<double> done_at;             // comm tasks: latest arrival so far
  std::vector<char> started, ended;
  std::vector<Key> keys;                   // send tasks: their identity across ranks
  std::unordered_map<Key, int, KeyHash> by_key;  // send tasks by identity
  std::unordered_map<int, std::vector<Parked>> parked;  // task -> senders that started first
};

std::string task_text(const Rank& r, int rank, int i) {
  const GraphTask& t = r.g->task(i);
  std::string s = "rank " + std::to_string(rank) + " task " + std::to_string(i) + " '" + t.name + "'";
  if (t.layer >= 0) s += " (layer " + std::to_string(t.layer) + ")";
  return s;
}

class Engine {
 public:
  Engine(const std::vector<const TaskGraph*>& graphs, const ClusterNetwork& net)
      : net_(net), paced_(net.cluster().spec().emulated_pacing) {
    const int W = net.cluster().world_size();
    if ((int)graphs.size() != W)
      throw std::invalid_argument("simulator: " + std::to_string(graphs.size()) + " graphs for a cluster of " +
                                  std::to_string(W) + " devices (" + net.cluster().spec().name + ")");
    ranks_.resize((size_t)W);
    free_at_.assign((size_t)net.link_count(), 0.0);
    result_.tasks.resize((size_t)W);
    result_.rank_end.assign((size_t)W, 0.0);
    for (int r = 0; r < W; ++r) prepare(r, *graphs[(size_t)r]);
    for (int r = 0; r < W; ++r) match_sends(r);
  }

  SimulationResult run() {
    for (int r = 0; r < (int)ranks_.size(); ++r) {
      Rank& R = ranks_[(size_t)r];
      for (int i = 0; i < (int)R.g->size(); ++i)
        if (R.waiting[(size_t)i] == 0) start(r, i, 0.0);
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      finish(e.rank, e.task, e.t);
    }
    for (int r = 0; r < (int)ranks_.size(); ++r) {
      const Rank& R = ranks_[(size_t)r];
      for (int i = 0; i < (int)R.g->size(); ++i)
        if (!R.ended[(size_t)i]) throw std::logic_error(stuck_message(r, i));
      result_.makespan = std::max(result_.makespan, result_.rank_end[(size_t)r]);
    }
    return std::move(result_);
  }

 private:
  int name_id(const std::string& name) {
    auto [it, added] = names_.try_emplace(name, (int)names_.size());
    return it->second;
  }

  void prepare(int r, const TaskGraph& g) {
    Rank& R = ranks_[(size_t)r];
    R.g = &g;
    const size_t n = g.size();
    const std::vector<int> order = g.topological_order();
    R.dep_begin.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      const auto& deps = g.task((int)i).deps;
      for (size_t k = 0; k < deps.size(); ++k)
        if (k == 0 || deps[k] != deps[k - 1]) ++R.dep_begin[(size_t)deps[k] + 1];
    }
    for (size_t i = 0; i < n; ++i) R.dep_begin[i + 1] += R.dep_begin[i];
    R.dependents.assign((size_t)R.dep_begin[n], 0);
    std::vector<int> fill(R.dep_begin.begin(), R.dep_begin.end() - 1);
    R.waiting.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const auto& deps = g.task((int)i).deps;
      for (size_t k = 0; k < deps.size(); ++k)
        if (k == 0 || deps[k] != deps[k - 1]) {
          R.dependents[(size_t)fill[(size_t)deps[k]]++] = (int)i;
          ++R.waiting[i];
        }
    }
    R.next_in_role.assign(n, -1);
    std::vector<int> last(2 * kStreamRoles, -1);  // per role, then per role's priority lane (as Executor)
    for (int i : order) {
      const int role = (int)g.task(i).role + (g.task(i).priority ? kStreamRoles : 0);
      if (last[(size_t)role] >= 0) {
        R.next_in_role[(size_t)last[(size_t)role]] = i;
        ++R.waiting[(size_t)i];
      }
      last[(size_t)role] = i;
    }
    if (!net_.cluster().spec().task_costs.empty()) {
      R.fitted.assign(n, {});
      for (size_t i = 0; i < n; ++i)
        if (g.task((int)i).category == TaskCategory::compute && !g.task((int)i).name.empty())
          R.fitted[i] = net_.cluster().task_cost(g.task((int)i).name);
    }
    R.pending.assign(n, 0);
    R.incoming.assign(n, 0);
    R.done_at.assign(n, 0.0);
    R.started.assign(n, 0);
    R.ended.assign(n, 0);
    result_.tasks[(size_t)r].assign(n, {});
    R.keys.assign(n, {});
    std::unordered_map<Key, int, KeyHash> seen;
    for (int i : order) {
      const GraphTask& t = g.task(i);
      if (t.category != TaskCategory::comm || t.cost.transfer != Transfer::send) continue;  // receivers too
      Key k{name_id(t.name), t.layer, t.expert, t.chunk, 0};
      k.occurrence = seen[k]++;
      R.by_key.emplace(k, i);
      R.keys[(size_t)i] = k;
    }
  }

  void match_sends(int r) {
    Rank& R = ranks_[(size_t)r];
    const size_t n = R.g->size();
    R.match_begin.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      const GraphTask& t = R.g->task((int)i);
      const bool sends = t.category == TaskCategory::comm && t.cost.transfer == Transfer::send;
      R.match_begin[i + 1] = R.match_begin[i] + (sends ? (int)t.cost.bytes_to_peer.size() : 0);
    }
    R.match.assign((size_t)R.match_begin[n], -1);
    const int W = (int)ranks_.size();
    for (size_t i = 0; i < n; ++i) {
      const int b = R.match_begin[i], e = R.match_begin[i + 1];
      if (b == e) continue;
      const GraphTask& t = R.g->task((int)i);
      const Key& key = R.keys[i];
      for (int k = b; k < e; ++k) {
        const int p = t.cost.bytes_to_peer[(size_t)(k - b)].first;
        if (p < 0 || p >= W)
          throw std::logic_error("simulator: " + task_text(R, r, (int)i) + " sends to rank " + std::to_string(p) +
                                 ", outside the " + std::to_string(W) + " ranks");
        if (p == r) continue;
        const auto& peer_keys = ranks_[(size_t)p].by_key;
        const auto it = peer_keys.find(key);
        if (it == peer_keys.end())
          throw std::logic_error("simulator: " + task_text(R, r, (int)i) + " sends to rank " + std::to_string(p) +
                                 ", which has no matching task (same name, layer, expert, chunk, occurrence)");
        R.match[(size_t)k] = it->second;
        ++ranks_[(size_t)p].incoming[(size_t)it->second];
      }
    }
  }

  void push_end(int r, int i, double t) { events_.push({t, seq_++, r, i}); }

  // A transfer between two started send tasks: (s, si) sends to (d, di).
  void transfer(int s, int si, int d, int di, uint64_t bytes, int messages, double now) {
    const TransferTiming tt = net_.reserve(free_at_.data(), s, d, (double)bytes, now, messages);
    ++result_.transfers;
    for (auto [r, i] : {std::pair{s, si}, std::pair{d, di}}) {
      Rank& R = ranks_[(size_t)r];
      R.done_at[(size_t)i] = std::max(R.done_at[(size_t)i], tt.arrival);
      if (--R.pending[(size_t)i] == 0) push_end(r, i, R.done_at[(size_t)i] + extra(R, i));
    }
  }

  void start(int r, int i, double now) {
    Rank& R = ranks_[(size_t)r];
    R.started[(size_t)i] = 1;
    result_.tasks[(size_t)r][(size_t)i].start = now;
    const GraphTask& t = R.g->task(i);
    const ClusterModel& cluster = net_.cluster();
    if (t.category == TaskCategory::compute) {
      const double modelled = cluster.compute_seconds(t.cost.flops);
      if (R.fitted.empty()) return push_end(r, i, now + modelled);
      const TaskCostFit& c = R.fitted[(size_t)i];
      return push_end(r, i, now + c.overhead + c.factor * modelled);
    }
    if (t.category == TaskCategory::io) return push_end(r, i, now + cluster.io_seconds((double)t.cost.copy_bytes));
    if (t.category != TaskCategory::comm) {
      const double bytes = (double)t.cost.copy_bytes;
      return push_end(r, i, now + (t.cost.device_copy ? cluster.device_copy_seconds(bytes) : cluster.copy_seconds(bytes)));
    }
    R.done_at[(size_t)i] = now;
    if (t.cost.transfer != Transfer::send) {
      double end = now;
      for (const auto& [p, bytes] : t.cost.bytes_to_peer) {
        const bool get = t.cost.transfer == Transfer::get;
        end = std::max(end, net_.reserve(free_at_.data(), get ? p : r, get ? r : p, (double)bytes, now, t.cost.messages).arrival);
        ++result_.transfers;
      }
      return push_end(r, i, end + extra(R, i));
    }
    if (paced_) return start_paced(r, i, now);
    const int b = R.match_begin[(size_t)i], e = R.match_begin[(size_t)i + 1];
    int out = 0;
    for (int k = b; k < e; ++k) out += R.match[(size_t)k] >= 0;
    R.pending[(size_t)i] = out + R.incoming[(size_t)i];
    if (R.pending[(size_t)i] == 0) return push_end(r, i, now + extra(R, i));
    for (int k = b; k < e; ++k) {
      const int j = R.match[(size_t)k];
      if (j < 0) continue;
      const auto [p, bytes] = t.cost.bytes_to_peer[(size_t)(k - b)];
      Rank& P = ranks_[(size_t)p];
      if (P.started[(size_t)j]) transfer(r, i, p, j, bytes, t.cost.messages, now);
      else P.parked[j].push_back({r, i, bytes, t.cost.messages});
    }
    const auto it = R.parked.find(i);
    if (it != R.parked.end()) {
      const std::vector<Parked> senders = std::move(it->second);
      R.parked.erase(it);
      for (const Parked& s : senders) transfer(s.rank, s.task, r, i, s.bytes, s.messages, now);
    }
  }

  // Emulated pacing (ClusterSpec::emulated_pacing, the link emulator's order): the task reserves
  // its flows now, receivers started or not; its real operation starts when the last of them
  // has arrived (`own`), and it ends once every peer that sends to it has reached that point too.
  void start_paced(int r, int i, double now) {
    Rank& R = ranks_[(size_t)r];
    const GraphTask& t = R.g->task(i);
    const int b = R.match_begin[(size_t)i], e = R.match_begin[(size_t)i + 1];
    double own = now;
    for (int k = b; k < e; ++k) {
      const auto [p, bytes] = t.cost.bytes_to_peer[(size_t)(k - b)];
      if (R.match[(size_t)k] < 0 || bytes == 0) continue;  // the emulator paces no empty flow
      own = std::max(own, net_.reserve(free_at_.data(), r, p, (double)bytes, now, t.cost.messages).arrival);
      ++result_.transfers;
    }
    R.done_at[(size_t)i] = own;
    R.pending[(size_t)i] = R.incoming[(size_t)i] + 1;  // the senders to it, and itself
    for (int k = b; k < e; ++k) {
      const int j = R.match[(size_t)k];
      if (j < 0) continue;
      const int p = t.cost.bytes_to_peer[(size_t)(k - b)].first;
      if (ranks_[(size_t)p].started[(size_t)j]) arrived(p, j, own);
      else ranks_[(size_t)p].parked[j].push_back({r, i, 0, 0, own});
    }
    if (const auto it = R.parked.find(i); it != R.parked.end()) {
      const std::vector<Parked> senders = std::move(it->second);
      R.parked.erase(it);
      for (const Parked& s : senders) arrived(r, i, s.arrival);
    }
    arrived(r, i, own);
  }

  // Emulated pacing: one sender of task (r, i), itself included, has all its flows delivered at t.
  void arrived(int r, int i, double t) {
    Rank& R = ranks_[(size_t)r];
    R.done_at[(size_t)i] = std::max(R.done_at[(size_t)i], t);
    if (--R.pending[(size_t)i] == 0) push_end(r, i, R.done_at[(size_t)i] + extra(R, i));
  }

  void finish(int r, int i, double now) {
    Rank& R = ranks_[(size_t)r];
    R.ended[(size_t)i] = 1;
    result_.tasks[(size_t)r][(size_t)i].end = now;
    result_.rank_end[(size_t)r] = std::max(result_.rank_end[(size_t)r], now);
    auto release = [&](int j) {
      if (--R.waiting[(size_t)j] == 0) start(r, j, now);
    };
    for (int k = R.dep_begin[(size_t)i]; k < R.dep_begin[(size_t)i + 1]; ++k) release(R.dependents[(size_t)k]);
    if (R.next_in_role[(size_t)i] >= 0) release(R.next_in_role[(size_t)i]);
  }

  std::string stuck_message(int r, int i) const {
    const Rank& R = ranks_[(size_t)r];
    std::string why = R.started[(size_t)i] ? "started but its transfers never completed (a peer never reached its matching task)"
                                           : "never started (it waits for a task that never ended)";
    return "simulator: the schedule cannot finish: " + task_text(R, r, i) + " " + why;
  }

  // A comm task's own time beyond its transfers (a calibrated host's; else 0).
  double extra(const Rank& R, int i) const {
    return net_.cluster().comm_extra_seconds((double)R.g->task(i).cost.bytes_sent());
  }

  const ClusterNetwork& net_;
  const bool paced_;  // ClusterSpec::emulated_pacing
  std::vector<Rank> ranks_;
  std::unordered_map<std::string, int> names_;
  std::vector<double> free_at_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  SimulationResult result_;
};

}  // namespace

SimulationResult simulate_graphs(const std::vector<const TaskGraph*>& graphs, const ClusterNetwork& network) {
  return Engine(graphs, network).run();
}

}  // namespace moebench

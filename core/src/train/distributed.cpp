#include "moebench/train/distributed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/janus.h"
#include "moebench/strategies/registry.h"
#include "moebench/train/checkpoint.h"

#include <unistd.h>

namespace moebench {
namespace {

std::vector<std::string> gather_hostnames(Communicator& world) {
  constexpr size_t kLen = 256;
  char mine[kLen] = {};
  gethostname(mine, kLen - 1);
  std::vector<char> all(kLen * world.size());
  world.all_gather(mine, all.data(), kLen, DType::u8);
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) hosts.emplace_back(all.data() + r * kLen);
  return hosts;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Distributed::Distributed(Communicator& world, const Config& cfg) : world_(world), executor_(world.rank()) {
  // The config's layout rules (batch, experts and nodes against the ranks) were checked for
  // run.ranks when it was loaded; `moebench run` under mpirun loads it with the launched size.
  if (cfg.run.ranks != world.size())
    throw std::invalid_argument("the config was checked for run.ranks = " + std::to_string(cfg.run.ranks) +
                                ", the launch has " + std::to_string(world.size()) + " ranks");
  const int nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : world.size() / nodes;
  const std::vector<std::string> hosts = gather_hostnames(world);
  ranks_on_host_ = (int)std::count(hosts.begin(), hosts.end(), hosts[world.rank()]);
  topology_ = resolve_topology(nodes, per_node, hosts);
  meter_ = std::make_unique<TrafficMeter>(world.rank(), topology_);
  world_.set_traffic_meter(meter_.get());
  GroupSizes sizes;
  sizes.ep = cfg.parallel.ep;
  groups_ = std::make_unique<ProcessGroups>(world_, sizes);
  grad_comm_ = groups_->dp().dup();
  dp_scale_ = 1.0f / (float)groups_->dp_size();
}

Distributed::~Distributed() {
  try {
    executor_.synchronize();
  } catch (...) {
  }
  world_.set_traffic_meter(nullptr);  // the world communicator outlives this meter
}

std::string Distributed::describe() const {
  return std::to_string(world_.size()) + " ranks, " + topology_.describe() + "; " + groups_->describe();
}

void Distributed::attach(MoeGpt& model, const Config& cfg) {
  const std::map<int, std::string> names = block_strategies(cfg, topology_.nodes(), topology_.devices_per_node());
  cluster_ = std::make_unique<ClusterModel>(cluster_model(cfg));
  ParallelContext& p = parallel_;
  p.strategy_for = [names, options = cfg.strategy](int block) { return make_strategy(names.at(block), options); };
  p.ep = &groups_->ep();
  p.dp = &groups_->dp();
  p.ep_streams = std::make_shared<EpStreams>();
  p.ep_streams->intra = groups_->ep().dup();
  p.ep_streams->inter = groups_->ep().dup();
  p.topology = &topology_;
  p.cluster = cluster_.get();
  p.executor = &executor_;
  p.pcie_switch_pairs = cfg.cluster.pcie_switch_pairs;
  model.distribute(p);
  float* grads = model.params().grads().data();
  std::set<int> dp_nodes;
  for (int p = 0; p < grad_comm_->size(); ++p) dp_nodes.insert(topology_.node_of(grad_comm_->world_rank(p)));
  const StreamRole role = dp_nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra;
  model.set_grad_ready_hook([this, grads, role](ArenaRange r) {
    GraphTask t;
    t.name = "grad.allreduce";
    t.category = TaskCategory::comm;
    t.role = role;
    const uint64_t bytes = r.count * sizeof(float);
    const int P = grad_comm_->size(), right = grad_comm_->world_rank((grad_comm_->rank() + 1) % P);
    if (P > 1) t.cost.bytes_to_peer.push_back({right, 2 * bytes * (P - 1) / P});  // ring all-reduce
    t.action = [this, grads, r] {
      float* g = grads + r.offset;
      grad_comm_->all_reduce(g, r.count, DType::f32);
      for (size_t i = 0; i < r.count; ++i) g[i] *= dp_scale_;
    };
    grad_graph_.add(std::move(t));
    executor_.submit(grad_graph_);
  });
}

double Distributed::finish_gradients(MoeGpt& model) {
  const auto t0 = std::chrono::steady_clock::now();
  executor_.run_inline("grad.wait", StreamRole::host, TaskCategory::comm, [this] { executor_.synchronize(); });
  grad_graph_ = TaskGraph();
  const double waited = seconds_since(t0);
  // Experts: each owner accumulated the contributions of every rank in its EP group; sum the
  // replicas (other EP groups) and scale like the dense gradients.
  float* grads = model.params().grads().data();
  Communicator& edp = groups_->expert_dp();
  for (const ArenaRange& r : model.expert_ranges()) {
    float* g = grads + r.offset;
    if (edp.size() > 1) edp.all_reduce(g, r.count, DType::f32);
    for (size_t i = 0; i < r.count; ++i) g[i] *= dp_scale_;
  }
  return waited;
}

double Distributed::clip_gradients(MoeGpt& model, float max_norm) {
  const std::vector<float>& g = model.params().grads();
  double dense = 0.0, experts = 0.0;
  for (const ArenaRange& r : model.dense_ranges())
    for (size_t i = r.offset; i < r.offset + r.count; ++i) dense += (double)g[i] * g[i];
  for (const ArenaRange& r : model.expert_ranges())
    for (size_t i = r.offset; i < r.offset + r.count; ++i) experts += (double)g[i] * g[i];
  groups_->ep().all_reduce(&experts, 1, DType::f64);
  const double norm = std::sqrt(dense + experts);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = (float)(max_norm / (norm + 1e-6));
    for (float& x : model.params().grads()) x *= scale;
  }
  return norm;
}

double Distributed::dp_mean(double v) {
  groups_->dp().all_reduce(&v, 1, DType::f64);
  return v / groups_->dp_size();
}

bool Distributed::any(bool flag) {
  int v = flag ? 1 : 0;
  world_.all_reduce(&v, 1, DType::i32, ReduceOp::max);
  return v != 0;
}

std::vector<std::vector<uint8_t>> Distributed::gather_to_root(const std::vector<uint8_t>& mine) {
  constexpr int kSizeTag = 21, kDataTag = 22;
  std::vector<std::vector<uint8_t>> all;
  if (world_.rank() != 0) {
    const int64_t n = (int64_t)mine.size();
    world_.send(&n, 1, DType::i64, 0, kSizeTag);
    if (n > 0) world_.send(mine.data(), mine.size(), DType::u8, 0, kDataTag);
    return all;
  }
  all.resize(world_.size());
  all[0] = mine;
  for (int r = 1; r < world_.size(); ++r) {
    int64_t n = 0;
    world_.recv(&n, 1, DType::i64, r, kSizeTag);
    all[r].resize((size_t)n);
    if (n > 0) world_.recv(all[r].data(), (size_t)n, DType::u8, r, kDataTag);
  }
  return all;
}

void Distributed::save(const std::string& dir, MoeGpt& model, const AdamW& opt, long step,
                       const std::string& config_json) {
  // The first EP group (world ranks 0 .. ep-1) holds one copy of every expert.
  Communicator& ep = groups_->ep();
  const bool first_group = groups_->expert_dp().rank() == 0;
  const std::vector<ArenaRange> ranges = model.expert_ranges();
  const ParamArena& params = model.params();
  if (first_group && ep.rank() != 0) {
    for (const ArenaRange& r : ranges) {
      ep.send(params.data().data() + r.offset, r.count, DType::f32, 0, 11);
      ep.send(opt.m().data() + r.offset, r.count, DType::f32, 0, 12);
      ep.send(opt.v().data() + r.offset, r.count, DType::f32, 0, 13);
    }
  }
  if (world_.rank() == 0) {
    // MoE blocks in block order with their expert counts.
    const MoeConfig& mc = model.moe_config();
    std::map<int, int> blocks;
    for (size_t i = 0; i < mc.moe_layers.size(); ++i) blocks[mc.moe_layers[i]] = mc.experts[i];
    const int64_t C = model.model_config().hidden, F = (int64_t)model.model_config().ffn_mult * C;
    std::vector<std::vector<float>> store;  // keeps received data alive for the TensorRefs
    std::vector<TensorRef> weights, moments;
    size_t bi = 0;
    for (const auto& [block, E] : blocks) {
      const size_t count = ranges.at(bi++).count;
      const int L = E / ep.size();
      for (int r = 1; r < ep.size(); ++r) {
        float* part[3];
        for (int k = 0; k < 3; ++k) {
          store.emplace_back(count);
          ep.recv(store.back().data(), count, DType::f32, r, 11 + k);
          part[k] = store.back().data();
        }
        size_t off = 0;
        for (int j = 0; j < L; ++j) {
          const std::string p = "blocks." + std::to_string(block) + ".moe.experts." + std::to_string(r * L + j) + ".";
          const std::pair<const char*, std::vector<int64_t>> tensors[] = {
              {"w1", {F, C}}, {"b1", {F}}, {"w2", {C, F}}, {"b2", {C}}};
          for (const auto& [name, shape] : tensors) {
            size_t n = 1;
            for (int64_t d : shape) n *= (size_t)d;
            weights.push_back({p + name, shape, part[0] + off});
            moments.push_back({"m." + p + name, shape, part[1] + off});
            moments.push_back({"v." + p + name, shape, part[2] + off});
            off += n;
          }
        }
      }
    }
    save_checkpoint(dir, params, opt, {step, config_json}, weights, moments);
  }
  world_.barrier();  // the files exist when save() returns on any rank
}

}  // namespace moebench

#include "moebench/train/distributed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "moebench/config/config_layout.h"
#include "moebench/config/usage_error.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/monta.h"
#include "moebench/strategies/registry.h"
#include "moebench/train/checkpoint.h"
#include "moebench/train/step_builder.h"
#include "moebench/train/device.h"
#include "moebench/train/emulation.h"

namespace moebench {

Distributed::Distributed(Communicator& world, const Config& cfg)
    : world_(world), own_executor_(std::make_unique<ThreadExecutor>(world.rank())), executor_(own_executor_.get()) {
  // The config's layout rules (batch, experts and nodes against the ranks) were checked for
  // run.ranks when it was loaded; `moebench run` under mpirun loads it with the launched size.
  if (cfg.run.ranks != world.size())
    throw std::invalid_argument("the config was checked for run.ranks = " + std::to_string(cfg.run.ranks) +
                                ", the launch has " + std::to_string(world.size()) + " ranks");
  const int nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : world.size() / nodes;
  const std::vector<std::string> hosts = gather_hostnames(world);
  ranks_on_host_ = (int)std::count(hosts.begin(), hosts.end(), hosts[world.rank()]);
  local_rank_ = host_local_rank(hosts, world.rank());
  topology_ = resolve_topology(nodes, per_node, hosts);
  meter_ = std::make_unique<TrafficMeter>(world.rank(), topology_);
  world_.set_traffic_meter(meter_.get());
  groups_ = std::make_unique<ProcessGroups>(world_, layout_of(cfg));
  dp_scale_ = 1.0f / (float)groups_->dp_size();
}

Distributed::~Distributed() {
  try {
    executor_->synchronize();
  } catch (...) {
  }
  dense_.reset();  // before the executor and the groups it uses
  world_.set_traffic_meter(nullptr);  // the world communicator outlives this meter
}

std::string Distributed::describe() const {
  return std::to_string(world_.size()) + " ranks, " + topology_.describe() + "; " + groups_->describe();
}

// `names` holds every block of the model (not only this pipeline stage's), the same on every
// rank, so every rank makes the same world-collective call or none.
void Distributed::enable_windows_if_pulled(const std::map<int, std::string>& names, const StrategyConfig& options) {
  for (const auto& [block, name] : names) {
    if (!make_strategy(name, options)->uses_windows()) continue;
    try {
      world_.enable_windows();
    } catch (const std::runtime_error& e) {
      throw UsageError("MoE block " + std::to_string(block) + " runs " + name +
                       ", which needs one-sided windows: " + e.what());
    }
    return;
  }
}

void Distributed::attach(MoeGpt& model, const Config& cfg, DeviceRuntime& device) {
  if (device.executor()) executor_ = device.executor();  // the GPU's streams
  // The gradients' communicators, for the memory they live in (MPI dups on the CPU, NCCL on the
  // GPU); collective over each group.
  grad_comm_ = device.data_communicator(groups_->dp());
  expert_comm_ = device.backend().device_memory() ? device.data_communicator(groups_->expert_dp()) : nullptr;
  const std::map<int, std::string> names = block_strategies(cfg, topology_.nodes(), topology_.devices_per_node());
  // The cluster the strategies' cost models choose on (monta "auto", fastermoe's shadowing and
  // topology-aware gate): the config's, or under [emulate] the cluster the run behaves like
  // (the emulated links stretched by the time scale, computing at [cluster]'s rates: describe
  // this machine there, e.g. cluster.file = a `moebench calibrate` file; "auto" as the ratio
  // of the two device rates).
  cluster_ = std::make_unique<ClusterModel>(cfg.emulate.cluster.empty() ? cluster_model(cfg)
                                                                        : emulated_run_cluster(cfg, cluster_model(cfg)));
  enable_windows_if_pulled(names, cfg.strategy);
  ParallelContext& p = parallel_;
  p.strategy_for = [names, options = cfg.strategy](int block) { return make_strategy(names.at(block), options); };
  p.ep = &groups_->ep();
  p.dp = &groups_->dp();
  if (device.backend().device_memory() && groups_->tp_size() > 1) {
    tp_comm_ = device.data_communicator(groups_->tp());
    tp_grad_comm_ = device.data_communicator(groups_->tp());
    p.tp_rows = std::make_shared<EpStreams>();  // the MoE blocks' rows over TP (monta's AllGathers)
    p.tp_rows->intra = device.data_communicator(groups_->tp());
    p.tp_rows->inter = device.data_communicator(groups_->tp());
  }
  p.tp = tp_comm_ ? tp_comm_.get() : &groups_->tp();  // activations' all-reduces (Megatron's f / g)
  p.ep_streams = std::make_shared<EpStreams>();
  p.ep_streams->intra = groups_->ep().dup();
  p.ep_streams->inter = groups_->ep().dup();
  const bool sliced = cfg.moe.expert_tp && groups_->tp_size() > 1;  // the blocks run their strategy on one EP rank too
  if (device.backend().device_memory() && (groups_->ep().size() > 1 || sliced)) {  // the MoE blocks' rows live on the device
    p.ep_rows = std::make_shared<EpStreams>();
    p.ep_rows->intra = device.data_communicator(groups_->ep());
    p.ep_rows->inter = device.data_communicator(groups_->ep());
  }
  if (device.backend().device_memory())
    p.rows_group = [&device](Communicator& group) { return device.data_communicator(group); };
  p.dp_streams = std::make_shared<EpStreams>();
  p.dp_streams->intra = groups_->dp().dup();
  p.dp_streams->inter = groups_->dp().dup();
  if (groups_->tp_size() > 1) p.tp_dup = groups_->tp().dup();
  p.experts_sliced = sliced;
  p.topology = &topology_;
  p.cluster = cluster_.get();
  p.executor = executor_;
  make_stage_links(device);
  model.distribute(p);
  float* grads = model.params().grads();
  std::set<int> dp_nodes;
  for (int p = 0; p < grad_comm_->size(); ++p) dp_nodes.insert(topology_.node_of(grad_comm_->world_rank(p)));
  const StreamRole role = dp_nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra;
  if (cfg.storage.dense == DenseStorage::zero3) {  // storage/dense_shards.h
    const AdamWHyper h{cfg.train.beta1, cfg.train.beta2, cfg.train.eps, cfg.train.weight_decay};
    dense_ = std::make_unique<DenseShards>(model, device.data_communicator(groups_->dp()),
                                           device.data_communicator(groups_->dp()), *executor_, role,
                                           cfg.storage.dense_prefetch, h, cfg.storage.zero3_experts);
    model.set_dense_use_hook([this](TaskGraph& g, int part, TaskId after) { return dense_->use(g, part, after); });
  }
  // Each dense bucket's reduction in the model's graph, after the task that completes it: on the
  // DP group's comm role while backward continues.
  has_columns_ = model.partitioned_embedding().count > 0;
  experts_sharded_ = dense_ && cfg.storage.zero3_experts;
  Backend& be = model.params().backend();
  model.set_grad_ready_hook([this, grads, role, &be](TaskGraph& g, ArenaRange r, int layer, TaskId after) {
    if (dense_) {  // reduce-scatter instead of all-reduce
      g.add(dense_->reduce_scatter_task(r, dp_scale_), {after});
      return;
    }
    GraphTask t;
    t.name = "grad.allreduce";
    t.category = TaskCategory::comm;
    t.role = role;
    t.layer = layer;
    const uint64_t bytes = r.count * sizeof(float);
    const int P = grad_comm_->size(), right = grad_comm_->world_rank((grad_comm_->rank() + 1) % P);
    if (P > 1) t.cost.bytes_to_peer.push_back({right, 2 * bytes * (P - 1) / P});  // ring all-reduce
    t.cost.messages = 2 * (P - 1);
    t.action = [this, grads, r, &be] {
      float* g = grads + r.offset;
      grad_comm_->all_reduce(g, r.count, DType::f32);
      be.scale(g, (long)r.count, dp_scale_);
    };
    g.add(std::move(t), {after});
  });
}

// The gradient norm's stages (Distributed::tail_action): 0 the sums of squares, 1 over TP, 2 over
// EP, 3 over DP, 4 over PP. A stage's all-reduce runs in its own task when its group has several
// ranks; a later task runs the stages before it whose group has one (their arithmetic only).
struct Distributed::Norm {
  // [0] tensors every rank of the TP group holds whole (counted once), [1] tensor-parallel slices
  // (summed over the TP group), [2] experts (summed over the EP group; expert slices,
  // moe.expert_tp, first over the TP group), `columns`: the partitioned embedding's columns and
  // ZeRO-3's shards (summed over the DP group).
  double sums[3] = {0.0, 0.0, 0.0}, expert_slices = 0.0, columns = 0.0, total = 0.0, norm = 0.0;
  int stage = 0;
};

// Per boundary b (stages b and b + 1) the PP group splits into the pair (key: the stage, so
// stage b is rank 0), and the pair gets one data communicator per direction; the first and last
// stages make their tied-embedding pair the same way (collective over the PP group).
void Distributed::make_stage_links(DeviceRuntime& device) {
  Communicator& pp = groups_->pp();
  const int stages = pp.size(), s = pp.rank();
  for (int b = 0; b + 1 < stages; ++b) {
    const bool member = s == b || s == b + 1;
    std::unique_ptr<Communicator> pair = pp.split(member ? 0 : -1, s);
    if (!member) continue;
    (s == b ? next_fwd_ : prev_fwd_) = device.data_communicator(*pair);
    (s == b ? next_bwd_ : prev_bwd_) = device.data_communicator(*pair);
  }
  if (stages > 1) {
    const bool end = s == 0 || s == stages - 1;
    std::unique_ptr<Communicator> pair = pp.split(end ? 0 : -1, s);
    if (end) tied_ = device.data_communicator(*pair);
  }
}

Distributed::StageLink Distributed::stage_link(bool forward, bool outgoing) const {
  // Forward goes to the next stage (this rank is the pair's rank 0) and comes from the previous
  // one (rank 1); backward the other way.
  const bool with_next = forward == outgoing;
  const std::unique_ptr<Communicator>& c = with_next ? (forward ? next_fwd_ : next_bwd_) : (forward ? prev_fwd_ : prev_bwd_);
  if (!c)
    throw std::logic_error(std::string("Distributed: no pipeline link with the ") + (with_next ? "next" : "previous") +
                           " stage (attach() makes them; the first and last stages have one neighbour)");
  return {c.get(), with_next ? 1 : 0};
}

std::function<void()> Distributed::tail_action(StepOp op, int layer, MoeGpt& model, float max_norm) {
  float* grads = model.params().grads();
  switch (op) {
    // Partial over the TP group (ppmoe's routers: each rank's experts' share; sliced experts'
    // b2): the gate sync, h x E floats per MoE block.
    case StepOp::tp_partial:
      return [this, &model, grads] {
        Communicator& tp = tp_grad_comm_ ? *tp_grad_comm_ : groups_->tp();
        for (const ArenaRange& r : model.tp_partial_ranges()) tp.all_reduce(grads + r.offset, r.count, DType::f32);
      };
    // The tied embedding on the first and last stage: each copy holds its DP-averaged part (the
    // embedding's, the head's); both become the sum. Ranks of one stage position meet their
    // partner of the same DP and TP coordinates.
    case StepOp::tied_grad:
      return [this, &model, grads] {
        const ParamView* wte = model.params().find("embed.wte");
        if (!wte) throw std::logic_error("tied head without embed.wte on a first or last stage");
        if (!tied_) throw std::logic_error("tied head without the first and last stages' link");
        tied_->all_reduce(grads + wte->offset, wte->numel, DType::f32);  // a + b on both: the same bits
      };
    // Experts: each owner accumulated the contributions of every rank in its EP group; sum the
    // replicas (other EP groups) and scale like the dense gradients, block by block.
    case StepOp::expert_allreduce:
      return [this, &model, grads, layer] {
        Communicator& replicas = expert_comm_ ? *expert_comm_ : groups_->expert_dp();
        for (const BlockExperts& b : model.expert_ranges())
          if (b.block == layer) {
            float* g = grads + b.range.offset;
            replicas.all_reduce(g, b.range.count, DType::f32);
            model.params().backend().scale(g, (long)b.range.count, dp_scale_);
          }
      };
    case StepOp::grad_norm:
      return [this, &model, grads] {
        Backend& be = model.params().backend();
        // The DP mean's scale where no reduction applied it: the partitioned embedding's columns
        // (MoESys §IV-C: each rank's columns already hold every DP rank's contributions, the
        // backward all-to-all) and experts without replicas.
        if (const ArenaRange part = model.partitioned_embedding(); part.count > 0)
          be.scale(grads + part.offset, (long)part.count, dp_scale_);
        if (groups_->expert_dp().size() == 1)
          for (const BlockExperts& b : model.expert_ranges()) be.scale(grads + b.range.offset, (long)b.range.count, dp_scale_);
        norm_ = std::make_unique<Norm>();
        Norm& n = *norm_;
        // Each view's sum of squares (one wait on a device), added to its part in view order.
        Backend::Ranges ranges;
        std::vector<double*> into;
        auto add = [&](double& sum, const ParamView& v) {
          ranges.emplace_back(v.offset, v.numel);
          into.push_back(&sum);
        };
        const ArenaRange copy = model.tied_embedding_copy();  // counted on the first stage
        const ArenaRange part = model.partitioned_embedding();
        for (const ParamView& v : model.params().views()) {
          if (part.count > 0 && v.offset == part.offset) add(n.columns, v);
          else if (v.name.find(".moe.experts.") != std::string::npos) add(v.slice.whole() ? n.sums[2] : n.expert_slices, v);
          else if (!(copy.count > 0 && v.offset == copy.offset)) add(n.sums[v.slice.whole() ? 0 : 1], v);
        }
        const std::vector<double> sums = be.sums_of_squares(grads, ranges);
        for (size_t i = 0; i < sums.size(); ++i) *into[i] += sums[i];
      };
    case StepOp::norm_tp: return [this] { advance_norm(1); };
    case StepOp::norm_ep: return [this] { advance_norm(2); };
    case StepOp::norm_dp: return [this] { advance_norm(3); };
    case StepOp::norm_pp: return [this] { advance_norm(4); };
    // Global L2 norm, scaling all gradients so it is at most max_norm (0 = no clipping).
    case StepOp::grad_clip:
      return [this, &model, max_norm] {
        advance_norm(4);
        Norm& n = *norm_;
        n.norm = std::sqrt(n.total);
        if (max_norm > 0 && n.norm > max_norm)
          model.params().backend().scale(model.params().grads(), (long)model.params().size(),
                                         (float)(max_norm / (n.norm + 1e-6)));
      };
    default: return {};
  }
}

void Distributed::advance_norm(int stage) {
  Norm& n = *norm_;
  const bool dense_columns = dense_ != nullptr;
  while (n.stage < stage) {
    switch (++n.stage) {
      case 1: {
        double tp_parts[2] = {n.sums[1], n.expert_slices};
        if (groups_->tp().size() > 1) groups_->tp().all_reduce(tp_parts, 2, DType::f64);
        n.sums[1] = tp_parts[0];
        n.sums[2] += tp_parts[1];
        break;
      }
      case 2:
        if (groups_->ep().size() > 1) groups_->ep().all_reduce(&n.sums[2], 1, DType::f64);
        break;
      case 3:
        if (dense_columns) {  // zero3: each DP rank holds its shards' reduced gradients (dense_shards.h)
          n.columns += n.sums[0];
          n.sums[0] = 0.0;
          if (experts_sharded_) {  // storage.zero3_experts: the experts' too
            n.columns += n.sums[2];
            n.sums[2] = 0.0;
          }
        }
        if (groups_->dp().size() > 1 && (has_columns_ || dense_columns)) groups_->dp().all_reduce(&n.columns, 1, DType::f64);
        break;
      case 4:
        n.total = n.sums[0] + n.sums[1] + n.sums[2] + n.columns;
        if (groups_->pp().size() > 1) groups_->pp().all_reduce(&n.total, 1, DType::f64);
        break;
    }
  }
}

double Distributed::grad_norm() const { return norm_ ? norm_->norm : 0.0; }

void Distributed::host_all_reduce(const char* name, Communicator& group, void* data, size_t count, DType type,
                                  int layer) {
  const uint64_t P = (uint64_t)group.size();
  if (P < 2) return;
  const uint64_t bytes = 2 * (P - 1) * count * dtype_size(type) / P;  // ring: to the next rank
  executor_->run_inline(name, StreamRole::host, TaskCategory::comm, [&] { group.all_reduce(data, count, type); }, layer,
                       0.0, bytes);
}

void Distributed::pp_sum(double* v, size_t n, const char* name) { host_all_reduce(name, groups_->pp(), v, n, DType::f64); }

double Distributed::dp_mean(double v) {
  host_all_reduce("loss.dp", groups_->dp(), &v, 1, DType::f64);
  return v / groups_->dp_size();
}

double Distributed::dp_weighted_mean(double v, double weight) {
  v *= weight;
  host_all_reduce("loss.dp", groups_->dp(), &v, 1, DType::f64);
  return v;
}

bool Distributed::any(bool flag) {
  int v = flag ? 1 : 0;
  world_.all_reduce(&v, 1, DType::i32, ReduceOp::max);
  return v != 0;
}

void Distributed::world_sum(SparseStepStats& s) {
  double counts[5] = {(double)s.hits, (double)s.misses, (double)s.bytes_read, (double)s.bytes_written, (double)s.evictions};
  double times[2] = {s.stall_s, s.update_s};
  executor_->run_inline("sparse.stats", StreamRole::host, TaskCategory::comm, [&] {
    world_.all_reduce(counts, 5, DType::f64);
    world_.all_reduce(times, 2, DType::f64, ReduceOp::max);
  });
  s.hits = (int64_t)counts[0], s.misses = (int64_t)counts[1], s.bytes_read = (int64_t)counts[2];
  s.bytes_written = (int64_t)counts[3], s.evictions = (int64_t)counts[4];
  s.stall_s = times[0], s.update_s = times[1];
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

namespace {

// One tensor (or tensor-parallel slice) a rank contributes to a checkpoint, serialised as
// name, whole shape, runs, then the weights and both moments of the held elements.
void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}
template <class T>
void put_value(std::vector<uint8_t>& out, T v) { put(out, &v, sizeof v); }

struct Reader {
  const std::vector<uint8_t>& in;
  size_t at = 0;
  void get(void* p, size_t n) {
    if (at + n > in.size()) throw std::runtime_error("checkpoint gather: a rank sent a truncated tensor list");
    std::memcpy(p, in.data() + at, n);
    at += n;
  }
  template <class T>
  T value() { T v; get(&v, sizeof v); return v; }
};

struct WholeTensor {
  std::vector<int64_t> shape;
  std::vector<float> w, m, v;
};

}  // namespace

void Distributed::save(const std::string& dir, MoeGpt& model, const AdamW& opt, long step,
                       const std::string& config_json) {
  const ParamArena& params = model.params();
  // The weights on the host: the arena itself on the CPU, a copy of a device's.
  const std::vector<float> host = params.backend().device_memory() ? params.host_data() : std::vector<float>{};
  const float* weights_at = host.empty() ? params.data() : host.data();
  const bool tp_first = groups_->tp().rank() == 0;
  const ArenaRange copy = model.tied_embedding_copy();  // the first stage's embed.wte is saved
  const ArenaRange part = model.partitioned_embedding();  // every DP rank saves its columns
  std::vector<uint8_t> mine;
  std::vector<float> mv;
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& v = params.views()[i];
    const bool expert = v.name.find(".moe.experts.") != std::string::npos;
    const bool columns = part.count > 0 && v.offset == part.offset;
    const bool holder = expert ? groups_->expert_dp().rank() == 0 &&
                                     (groups_->layout().experts_in_tp() || !v.slice.whole() || tp_first)
                               : (columns || groups_->dp().rank() == 0) && (!v.slice.whole() || tp_first) &&
                                     !(copy.count > 0 && v.offset == copy.offset);
    if (!holder) continue;
    put_value<uint32_t>(mine, (uint32_t)v.name.size());
    put(mine, v.name.data(), v.name.size());
    const std::vector<int64_t>& shape = v.full_shape();
    put_value<uint32_t>(mine, (uint32_t)shape.size());
    put(mine, shape.data(), shape.size() * sizeof(int64_t));
    const std::vector<std::pair<size_t, size_t>> whole = {{0, v.numel}};
    const auto& runs = v.slice.whole() ? whole : v.slice.runs;
    put_value<uint64_t>(mine, runs.size());
    for (const auto& [offset, count] : runs) {
      put_value<uint64_t>(mine, offset);
      put_value<uint64_t>(mine, count);
    }
    put(mine, weights_at + v.offset, v.numel * sizeof(float));
    mv.resize(2 * v.numel);  // the moments, wherever the optimizer keeps them
    opt.read_moments(i, mv.data(), mv.data() + v.numel);
    put(mine, mv.data(), 2 * v.numel * sizeof(float));
  }
  const std::vector<std::vector<uint8_t>> all = gather_to_root(mine);
  if (world_.rank() == 0) {
    std::map<std::string, WholeTensor> tensors;  // name order: what the file lists anyway
    for (const auto& buf : all) {
      Reader in{buf};
      while (in.at < buf.size()) {
        std::string name(in.value<uint32_t>(), '\0');
        in.get(name.data(), name.size());
        WholeTensor& t = tensors[name];
        t.shape.resize(in.value<uint32_t>());
        in.get(t.shape.data(), t.shape.size() * sizeof(int64_t));
        size_t numel = 1;
        for (int64_t d : t.shape) numel *= (size_t)d;
        for (auto* x : {&t.w, &t.m, &t.v}) x->resize(numel);
        std::vector<std::pair<size_t, size_t>> runs(in.value<uint64_t>());
        size_t held = 0;
        for (auto& [offset, count] : runs) {
          offset = in.value<uint64_t>();
          count = in.value<uint64_t>();
          if (offset + count > numel) throw std::runtime_error("checkpoint gather: a slice of " + name + " lies outside it");
          held += count;
        }
        for (auto* x : {&t.w, &t.m, &t.v}) {
          std::vector<float> part(held);
          in.get(part.data(), held * sizeof(float));
          size_t at = 0;
          for (const auto& [offset, count] : runs) {
            std::copy_n(part.begin() + (long)at, count, x->begin() + (long)offset);
            at += count;
          }
        }
      }
    }
    std::vector<TensorRef> weights, moments;
    for (const auto& [name, t] : tensors) {
      weights.push_back({name, t.shape, t.w.data()});
      moments.push_back({"m." + name, t.shape, t.m.data()});
      moments.push_back({"v." + name, t.shape, t.v.data()});
    }
    write_checkpoint(dir, {step, config_json}, weights, moments);
  }
  world_.barrier();  // the files exist when save() returns on any rank
}

}  // namespace moebench

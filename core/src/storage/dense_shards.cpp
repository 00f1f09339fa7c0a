#include "moebench/storage/dense_shards.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moebench {

namespace {

// The part a tensor belongs to (see the header), or kExpert for an expert's tensor.
constexpr int kExpert = -2;
int part_of(const std::string& name, int layers) {
  if (name.find(".moe.experts.") != std::string::npos) return kExpert;
  if (name.starts_with("embed.")) return -1;
  if (name.starts_with("blocks.")) return std::stoi(name.substr(7));
  return layers;  // ln_f, lm_head
}

}  // namespace

DenseShards::DenseShards(MoeGpt& model, std::unique_ptr<Communicator> gather, std::unique_ptr<Communicator> grads,
                         Executor& executor, StreamRole role, bool prefetch, AdamWHyper h, bool experts)
    : model_(model),
      executor_(executor),
      role_(role),
      prefetch_(prefetch),
      hyper_(h),
      P_(gather->size()),
      me_(gather->rank()),
      gather_comm_(std::move(gather)),
      grad_comm_(std::move(grads)) {
  if (model.pipe().stages > 1 || model.tp().size > 1 || model.embed_shard().size > 1)
    throw std::invalid_argument("storage.dense = \"zero3\" needs parallel.tp = 1, parallel.pp = 1 and no "
                                "model.embedding_partition");
  const int layers = model.model_config().layers;
  model.set_experts_in_block_parts(experts);
  const ParamArena& params = model.params();
  for (const ParamView& v : params.views()) {
    if (!v.slice.whole()) throw std::invalid_argument("storage.dense = \"zero3\": " + v.name + " is a slice");
    int part = part_of(v.name, layers);
    if (part == kExpert && !experts) continue;
    if (part == kExpert) part = std::stoi(v.name.substr(7));  // "blocks.<b>.moe.experts...": block b's part
    if (!parts_.empty() && parts_.back().part == part &&
        parts_.back().range.offset + parts_.back().range.count == v.offset) {
      parts_.back().range.count += v.numel;
      continue;
    }
    for (const Part& p : parts_)
      if (p.part == part) throw std::logic_error("DenseShards: the dense tensors of part " + std::to_string(part) + " are not contiguous");
    parts_.push_back({part, {v.offset, v.numel}, 0, {}});
  }
  for (Part& p : parts_) {
    const size_t n = p.range.count, P = (size_t)P_;
    p.shard = (n + P - 1) / P;
    const size_t lo = std::min(n, (size_t)me_ * p.shard), hi = std::min(n, lo + p.shard);
    p.owned = {p.range.offset + lo, hi - lo};
  }
  fresh_.assign(parts_.size(), true);  // init() gave every rank the same weights
  Backend& be = params.backend();
  for (size_t i = 0; i < parts_.size(); ++i) {
    const std::string what = "zero3's padded buffers of dense part " + std::to_string(parts_[i].part);
    buffers_.push_back({DeviceArray<float>(be, what), DeviceArray<float>(be, what), DeviceArray<float>(be, what),
                        DeviceArray<float>(be, "zero3's reduced gradient shards")});
  }
  // The optimizer's elements: this rank's shards plus everything outside the dense parts (experts).
  std::vector<std::pair<size_t, size_t>> runs;
  size_t at = 0;
  for (const Part& p : parts_) {
    if (p.range.offset > at) runs.push_back({at, p.range.offset - at});
    if (p.owned.count > 0) runs.push_back({p.owned.offset, p.owned.count});
    at = p.range.offset + p.range.count;
  }
  if (params.size() > at) runs.push_back({at, params.size() - at});
  opt_ = std::make_unique<ShardedAdamW>(params, runs, h);
}

DenseShards::~DenseShards() = default;

size_t DenseShards::index_of(int part) const {
  for (size_t i = 0; i < parts_.size(); ++i)
    if (parts_[i].part == part) return i;
  throw std::logic_error("DenseShards: no dense part " + std::to_string(part));
}

void DenseShards::all_gather_part(const Part& p, float* data, Communicator& comm, DeviceArray<float>& pad) {
  const size_t n = p.range.count, s = p.shard, P = (size_t)P_, lo = (size_t)me_ * s;
  if (s * P == n) return comm.all_gather(data + lo, data, s, DType::f32);  // in place
  Backend& be = pad.backend();
  float* buf = pad.ensure_data(P * s);
  be.copy(buf + lo, data + std::min(lo, n), p.owned.count * sizeof(float));
  comm.all_gather(buf + lo, buf, s, DType::f32);
  be.copy(data, buf, n * sizeof(float));
}

void DenseShards::gather(size_t i) {
  const Part& p = parts_[i];
  float* weights = model_.params().data() + p.range.offset;
  all_gather_part(p, weights, *gather_comm_, buffers_[i].gather);
  model_.params().backend().weights_changed(weights, p.range.count);  // their bf16 copies (mixed precision)
}

namespace {
// The span layer of a part: the block, -1 for the embeddings and the head (as their stages).
int layer_of(int part, int layers) { return part >= 0 && part < layers ? part : -1; }
// A ring collective of P shards of s floats: (P-1) s floats to the next rank in P-1 messages.
uint64_t ring_bytes(size_t s, int P) { return (uint64_t)(P - 1) * s * sizeof(float); }
}  // namespace

void DenseShards::gather_now(size_t i) {
  const int layer = layer_of(parts_[i].part, model_.model_config().layers);
  executor_.run_inline("dense.allgather", role_, TaskCategory::comm, [&] { gather(i); }, layer, 0.0,
                       ring_bytes(parts_[i].shard, P_));
  fresh_[i] = true;
}

GraphTask DenseShards::gather_task(size_t i, StreamRole role) {
  GraphTask t;
  t.name = "dense.allgather";
  t.category = TaskCategory::comm;
  t.role = role;
  t.layer = layer_of(parts_[i].part, model_.model_config().layers);
  if (P_ > 1) t.cost.bytes_to_peer.push_back({gather_comm_->world_rank((me_ + 1) % P_), ring_bytes(parts_[i].shard, P_)});
  t.cost.messages = P_ - 1;
  t.action = [this, i] { gather(i); };
  return t;
}

TaskId DenseShards::use(TaskGraph& g, int part, TaskId after) {
  const size_t i = index_of(part);
  if (auto it = prefetched_.find(i); it != prefetched_.end()) {
    GraphTask join;  // the part's compute waits for its prefetch (a join, no span)
    join.role = StreamRole::host;
    join.category = TaskCategory::comm;
    after = g.add(std::move(join), {after, it->second});
    prefetched_.erase(it);
  } else if (!fresh_[i]) {
    after = g.add(gather_task(i, StreamRole::host), {after});  // on demand, in the chain
  }
  fresh_[i] = true;
  const size_t next = i + 1;
  if (prefetch_ && next < parts_.size() && !fresh_[next]) {  // Algorithm 1: the next part's gather now
    prefetched_[next] = g.add(gather_task(next, role_), {after});
    fresh_[next] = true;
  }
  return after;
}

GraphTask DenseShards::reduce_scatter_task(ArenaRange r, float scale) {
  size_t i = 0;
  while (i < parts_.size() && !(parts_[i].range.offset == r.offset && parts_[i].range.count == r.count)) ++i;
  if (i == parts_.size())
    throw std::logic_error("DenseShards: gradient range [" + std::to_string(r.offset) + ", " +
                           std::to_string(r.offset + r.count) + ") is not a dense part");
  const Part& p = parts_[i];
  GraphTask t;
  t.name = "grad.reduce_scatter";
  t.category = TaskCategory::comm;
  t.role = role_;
  t.layer = layer_of(p.part, model_.model_config().layers);
  if (P_ > 1) t.cost.bytes_to_peer.push_back({grad_comm_->world_rank((me_ + 1) % P_), ring_bytes(p.shard, P_)});
  t.cost.messages = P_ - 1;
  t.action = [this, i, scale] {
    const Part& q = parts_[i];
    const size_t n = q.range.count, s = q.shard, P = (size_t)P_;
    Backend& be = model_.params().backend();
    float* g = model_.params().grads() + q.range.offset;
    float* mine = buffers_[i].mine.ensure_data(s);
    if (s * P == n) {
      grad_comm_->reduce_scatter(g, mine, s, DType::f32);
    } else {
      float* buf = buffers_[i].grads.ensure_data(P * s);
      be.copy(buf, g, n * sizeof(float));
      be.zero(buf + n, (P * s - n) * sizeof(float));  // the padding
      grad_comm_->reduce_scatter(buf, mine, s, DType::f32);
    }
    be.zero(g, n * sizeof(float));  // only this rank's shard is meaningful from here on
    float* own = g + (q.owned.offset - q.range.offset);
    be.copy(own, mine, q.owned.count * sizeof(float));
    be.scale(own, (long)q.owned.count, scale);
  };
  return t;
}

void DenseShards::optimizer_step(float lr, long t) {
  opt_->step(model_.params(), lr, t);
  fresh_.assign(parts_.size(), false);
  prefetched_.clear();
}

void DenseShards::gather_all() {
  for (size_t i = 0; i < parts_.size(); ++i)
    if (!fresh_[i]) gather_now(i);
}

AdamW DenseShards::whole_state() {
  gather_all();
  AdamW whole(model_.params(), hyper_);
  opt_->export_to(whole.m(), whole.v());
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part& p = parts_[i];
    all_gather_part(p, whole.m() + p.range.offset, *gather_comm_, buffers_[i].moments);
    all_gather_part(p, whole.v() + p.range.offset, *gather_comm_, buffers_[i].moments);
  }
  return whole;
}

void DenseShards::load_state(const AdamW& whole) {
  opt_->import_from(whole.m(), whole.v());
  fresh_.assign(parts_.size(), true);
}

}  // namespace moebench

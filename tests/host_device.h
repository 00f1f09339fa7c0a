#pragma once
// A device without a GPU, for the tests of the GPU path's multi-rank wiring (train/device.h's
// parts constructor): HostDevice is the CPU backend's arithmetic behind a Backend that says
// its arrays are device memory — so the model, the trainer and Distributed take the device
// branches (host copies for checkpoints and losses, gradients reduced over the device's data
// communicators) — with MoE blocks on the host's rows (moe/moe_rows.h). RecordingCommunicator wraps a data communicator and records
// each collective a rank issues on it, as the NCCL communicator would receive them.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/dist/served_window.h"
#include "moebench/model/cpu_backend.h"
#include "moebench/moe/moe_rows.h"

namespace moebench::test {

class HostDevice final : public Backend {
 public:
  // weight_copies: the bookkeeping of a GPU's mixed precision (tensor/backend.h
  // keep_weight_copies) without its rounding: the dense GEMMs read the copies of the kept weights
  // that weights_changed last wrote, exact fp32 copies, so only a stale copy changes the results.
  explicit HostDevice(bool weight_copies = false) : weight_copies_(weight_copies) {}
  std::string name() const override { return "host-device"; }
  bool device_memory() const override { return true; }
  bool mixed_precision() const override { return weight_copies_; }
  void keep_weight_copies(const float* p, size_t n) override {
    if (weight_copies_) kept_.push_back({p, std::vector<float>(n)});  // zeros until weights_changed
  }
  void weights_changed(const float* p, size_t n) override {
    for (Kept& k : kept_) {
      const float* lo = std::max(p, k.p);
      const float* hi = std::min(p + n, k.p + k.copy.size());
      if (lo < hi) std::copy(lo, hi, k.copy.begin() + (lo - k.p));
    }
  }
  std::unique_ptr<MoeRows> make_moe_rows() override { return make_host_moe_rows(); }

  void* allocate(size_t bytes, const char* what) override { return cpu().allocate(bytes, what); }
  void release(void* p) noexcept override { cpu().release(p); }
  void zero(void* p, size_t bytes) override { cpu().zero(p, bytes); }
  void copy(void* d, const void* s, size_t bytes) override { cpu().copy(d, s, bytes); }
  void to_device(void* d, const void* h, size_t bytes) override { cpu().to_device(d, h, bytes); }
  void to_host(void* h, const void* s, size_t bytes) override { cpu().to_host(h, s, bytes); }
  double sum(const float* x, long n) override { return cpu().sum(x, n); }
  std::vector<double> sums_of_squares(const float* x, const Ranges& r) override { return cpu().sums_of_squares(x, r); }
  void scale(float* x, long n, float s) override { cpu().scale(x, n, s); }
  void adamw_update(float* p, const float* g, float* m, float* v, long n, const AdamWHyper& h, float lr, long t,
                    float wd) override {
    cpu().adamw_update(p, g, m, v, n, h, lr, t, wd);
  }
  void encoder_forward(float* o, const int* i, const float* wte, const float* wpe, int B, int T, int C) override {
    cpu().encoder_forward(o, i, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* d, const int* i, int B, int T, int C) override {
    cpu().encoder_backward(dwte, dwpe, d, i, B, T, C);
  }
  void position_embedding_forward(float* x, const float* wpe, long N, int T, int C) override {
    cpu().position_embedding_forward(x, wpe, N, T, C);
  }
  void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C) override {
    cpu().position_embedding_backward(dwpe, dx, N, T, C);
  }
  void embedding_partition_lookup(float* o, const int* ids, const float* w, long rows, int Cp) override {
    cpu().embedding_partition_lookup(o, ids, w, rows, Cp);
  }
  void embedding_partition_assemble(float* x, const float* s, const float* wpe, long N, int T, int P, int Cp) override {
    cpu().embedding_partition_assemble(x, s, wpe, N, T, P, Cp);
  }
  void embedding_partition_split(float* s, const float* dx, long N, int P, int Cp) override {
    cpu().embedding_partition_split(s, dx, N, P, Cp);
  }
  void embedding_partition_backward(float* dw, const float* ds, const int* ids, long rows, int Cp) override {
    cpu().embedding_partition_backward(dw, ds, ids, rows, Cp);
  }
  void layernorm_forward(float* o, float* mean, float* rstd, const float* in, const float* w, const float* b, int N,
                         int C) override {
    cpu().layernorm_forward(o, mean, rstd, in, w, b, N, C);
  }
  void layernorm_backward(float* di, float* dw, float* db, const float* d, const float* in, const float* w,
                          const float* mean, const float* rstd, int N, int C) override {
    cpu().layernorm_backward(di, dw, db, d, in, w, mean, rstd, N, C);
  }
  void matmul_forward(float* o, const float* in, const float* w, const float* b, int N, int C, int OC) override {
    cpu().matmul_forward(o, in, weights(w, (size_t)OC * C), b, N, C, OC);
  }
  void matmul_backward(float* di, float* dw, float* db, const float* d, const float* in, const float* w, int N, int C,
                       int OC) override {
    cpu().matmul_backward(di, dw, db, d, in, weights(w, (size_t)OC * C), N, C, OC);
  }
  void attention_forward(float* o, float* pre, float* att, const float* qkv, int B, int T, int C, int NH) override {
    cpu().attention_forward(o, pre, att, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, float* dpre, float* datt, const float* d, const float* qkv, const float* att,
                          int B, int T, int C, int NH) override {
    cpu().attention_backward(dqkv, dpre, datt, d, qkv, att, B, T, C, NH);
  }
  void gelu_forward(float* o, const float* in, long N) override { cpu().gelu_forward(o, in, N); }
  void gelu_backward(float* di, const float* in, const float* d, long N) override { cpu().gelu_backward(di, in, d, N); }
  void residual_forward(float* o, const float* a, const float* b, long N) override { cpu().residual_forward(o, a, b, N); }
  void crossentropy_softmax_forward(float* l, float* p, const float* lg, const int* t, int N, int V) override {
    cpu().crossentropy_softmax_forward(l, p, lg, t, N, V);
  }
  void crossentropy_softmax_backward(float* dl, const float* p, const int* t, float d, int N, int V) override {
    cpu().crossentropy_softmax_backward(dl, p, t, d, N, V);
  }
  void vocab_slice_embed(float* o, const int* t, const float* w, long N, int C, int lo, int Vt) override {
    cpu().vocab_slice_embed(o, t, w, N, C, lo, Vt);
  }
  void vocab_slice_embed_backward(float* dw, const float* d, const int* t, long N, int C, int lo, int Vt) override {
    cpu().vocab_slice_embed_backward(dw, d, t, N, C, lo, Vt);
  }
  void vocab_ce_row_max(float* m, const float* lg, int N, int Vt) override { cpu().vocab_ce_row_max(m, lg, N, Vt); }
  void vocab_ce_exp(float* p, float* st, const float* lg, const float* m, const int* t, int N, int Vt, int lo) override {
    cpu().vocab_ce_exp(p, st, lg, m, t, N, Vt, lo);
  }
  void vocab_ce_finish(float* l, float* p, const float* st, const float* m, int N, int Vt) override {
    cpu().vocab_ce_finish(l, p, st, m, N, Vt);
  }
  void vocab_ce_backward(float* dl, const float* p, const int* t, float d, int N, int Vt, int lo) override {
    cpu().vocab_ce_backward(dl, p, t, d, N, Vt, lo);
  }

 private:
  static Backend& cpu() { return cpu_backend(); }
  // The kept copy of [w, w + n), or w itself outside the kept ranges.
  const float* weights(const float* w, size_t n) const {
    for (const Kept& k : kept_)
      if (w >= k.p && w + n <= k.p + k.copy.size()) return k.copy.data() + (w - k.p);
    return w;
  }
  struct Kept {
    const float* p;
    std::vector<float> copy;
  };
  bool weight_copies_;
  std::vector<Kept> kept_;
};

// One collective a rank issued on a data communicator.
struct RecordedCall {
  std::string op;  // "all_reduce", ...
  size_t count = 0;
  std::vector<int> group;  // world ranks of the communicator it went over
};

// Forwards every call to `inner`, recording the collectives and point-to-point messages.
// send() returns once the message is handed over, as a device's data communicator does (NCCL
// enqueues it on the stream: dist/nccl_communicator.h follow_streams): the data is copied and
// sent in the background (completed by later calls and the destructor), so a rank that sends to
// its pipeline neighbour while the neighbour sends to it does not block the fake device's one
// host thread, which runs every action inline.
// With `machine` (world rank -> machine number), its windows reach only the ranks of this rank's
// machine, as the NCCL backend's CUDA IPC windows do: window_reach says so, and an operation on
// another machine's rank throws.
class RecordingCommunicator final : public Communicator {
 public:
  RecordingCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<std::vector<RecordedCall>> log,
                        std::function<int(int)> machine = {})
      : inner_(std::move(inner)), log_(std::move(log)), machine_(std::move(machine)) {
    for (int r = 0; r < inner_->size(); ++r) group_.push_back(inner_->world_rank(r));
  }
  ~RecordingCommunicator() override {
    for (Sent& s : sent_) s.request->wait();
  }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int world_rank(int r) const override { return inner_->world_rank(r); }
  std::string backend() const override { return inner_->backend(); }
  void send(const void* b, size_t n, DType t, int peer, int tag) override {
    note("send", n);
    std::erase_if(sent_, [](Sent& s) { return s.request->test(); });
    Sent s;
    s.data.assign(static_cast<const uint8_t*>(b), static_cast<const uint8_t*>(b) + n * dtype_size(t));
    s.request = inner_->isend(s.data.data(), n, t, peer, tag);
    sent_.push_back(std::move(s));
  }
  void recv(void* b, size_t n, DType t, int peer, int tag) override { note("recv", n), inner_->recv(b, n, t, peer, tag); }
  RequestPtr isend(const void* b, size_t n, DType t, int peer, int tag) override {
    note("isend", n);
    return inner_->isend(b, n, t, peer, tag);
  }
  RequestPtr irecv(void* b, size_t n, DType t, int peer, int tag) override {
    note("irecv", n);
    return inner_->irecv(b, n, t, peer, tag);
  }
  void all_reduce(void* d, size_t n, DType t, ReduceOp op) override { note("all_reduce", n), inner_->all_reduce(d, n, t, op); }
  void all_gather(const void* s, void* r, size_t n, DType t) override { note("all_gather", n), inner_->all_gather(s, r, n, t); }
  void reduce_scatter(const void* s, void* r, size_t n, DType t, ReduceOp op) override {
    note("reduce_scatter", n), inner_->reduce_scatter(s, r, n, t, op);
  }
  void all_to_all_v(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc, const size_t* rd,
                    DType t) override {
    note("all_to_all_v", 0), inner_->all_to_all_v(s, sc, sd, r, rc, rd, t);
  }
  void broadcast(void* d, size_t n, DType t, int root) override { note("broadcast", n), inner_->broadcast(d, n, t, root); }
  void reduce(void* d, size_t n, DType t, int root, ReduceOp op) override {
    note("reduce", n), inner_->reduce(d, n, t, root, op);
  }
  void barrier() override { note("barrier", 0), inner_->barrier(); }
  RequestPtr iall_reduce(void* d, size_t n, DType t, ReduceOp op) override {
    note("iall_reduce", n);
    return inner_->iall_reduce(d, n, t, op);
  }
  RequestPtr iall_gather(const void* s, void* r, size_t n, DType t) override {
    note("iall_gather", n);
    return inner_->iall_gather(s, r, n, t);
  }
  RequestPtr iall_to_all_v(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                           const size_t* rd, DType t) override {
    note("iall_to_all_v", 0);
    return inner_->iall_to_all_v(s, sc, sd, r, rc, rd, t);
  }
  RequestPtr ibroadcast(void* d, size_t n, DType t, int root) override {
    note("ibroadcast", n);
    return inner_->ibroadcast(d, n, t, root);
  }
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_->split(color, key); }
  std::unique_ptr<Communicator> dup() override { return inner_->dup(); }
  std::unique_ptr<Window> create_window(void* b, size_t n, DType t) override {
    note("create_window", n);
    auto w = inner_->create_window(b, n, t);
    if (!machine_) return w;
    std::vector<char> reached;
    for (int g : window_reach()) reached.push_back(g == machine_(world_rank(rank())));
    return std::make_unique<MachineWindow>(std::move(w), std::move(reached));
  }
  std::unique_ptr<WindowStaging> window_staging(Window& w, void* base) override { return inner_->window_staging(w, base); }
  std::vector<int> window_reach() override {
    if (!machine_) return inner_->window_reach();
    std::vector<int> m;
    for (int w : group_) m.push_back(machine_(w));
    return m;
  }
  std::unique_ptr<SharedWindow> create_shared_window(size_t bytes) override { return inner_->create_shared_window(bytes); }

 private:
  void note(const char* op, size_t n) { log_->push_back({op, n, group_}); }
  struct Sent {  // a send in the background: its copy of the data and its request
    std::vector<uint8_t> data;
    RequestPtr request;
  };
  // A window whose operations reach only the ranks of one machine.
  class MachineWindow final : public Window {
   public:
    MachineWindow(std::unique_ptr<Window> inner, std::vector<char> reached)
        : inner_(std::move(inner)), reached_(std::move(reached)) {}
    void get(void* d, size_t n, int r, size_t o) override { inner_->get(d, n, reach(r, "get"), o); }
    void put(const void* s, size_t n, int r, size_t o) override { inner_->put(s, n, reach(r, "put"), o); }
    void accumulate(const void* s, size_t n, int r, size_t o, ReduceOp op) override {
      inner_->accumulate(s, n, reach(r, "accumulate"), o, op);
    }
    void flush(int r) override { inner_->flush(reach(r, "flush")); }
    void flush_all() override { inner_->flush_all(); }
    void barrier() override { inner_->barrier(); }
    DType dtype() const override { return inner_->dtype(); }
    size_t local_count() const override { return inner_->local_count(); }

   private:
    int reach(int r, const char* op) const {
      if (!reached_.at((size_t)r))
        throw std::logic_error(std::string("window ") + op + " on rank " + std::to_string(r) + " of another machine");
      return r;
    }
    std::unique_ptr<Window> inner_;
    std::vector<char> reached_;
  };
  std::unique_ptr<Communicator> inner_;
  std::vector<Sent> sent_;
  std::shared_ptr<std::vector<RecordedCall>> log_;
  std::function<int(int)> machine_;
  std::vector<int> group_;
};

}  // namespace moebench::test

#pragma once
// Backend: where a model's arrays live and what runs its layer functions. The model's code
// (model/moe_gpt_layers.cpp) is written once against this interface:
//   cpu   (model/cpu_backend.h)  host memory; the functions are core's llm.c-style CPU
//         functions (tensor/, model/), run on the calling thread.
//   cuda  (model/cuda_backend.h, CUDA build only)  cudaMalloc'd memory on one GPU; the
//         functions enqueue kernels/'s launchers (the CPU functions' names and arguments) on
//         the stream of the running task (runtime/device_queue.h's current stream) and return
//         before the GPU ran them.
// Every pointer argument is memory of this backend (allocate()), except the host pointers of
// to_device / to_host. Functions document their semantics where the CPU function is declared;
// each backend computes the same values (fp32: the CUDA kernels agree with the CPU functions
// within rounding, tests/tst_kernels_*). A function a backend cannot run throws
// std::runtime_error naming it and the backend.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moebench/tensor/adamw_update.h"

namespace moebench {

class MoeRows;  // moe/moe_rows.h

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "cuda:<device>": in error messages and run records.
  virtual std::string name() const = 0;
  // Whether arrays are device memory, which host code cannot read (to_host copies them out).
  virtual bool device_memory() const = 0;

  // Memory. allocate names what the array holds (`what`) in its out-of-memory error, with the
  // size and the device. Copies and zeroing are ordered with the layer functions (the CPU runs
  // them at once; the GPU on the current stream); to_host returns once the bytes are on the host.
  virtual void* allocate(size_t bytes, const char* what) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void zero(void* p, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void to_device(void* dst, const void* host, size_t bytes) = 0;
  virtual void to_host(void* host, const void* src, size_t bytes) = 0;
  // Page-locked host memory on GPUs (plain host memory on the CPU), and the copy from it that
  // returns at once: the bytes are read when the current stream gets there, so the caller keeps
  // `pinned` unchanged until that work is done (the micro-batch's token ids, on the copy role).
  virtual void* allocate_pinned(size_t bytes) { return ::operator new(bytes ? bytes : 1); }
  virtual void release_pinned(void* p) noexcept { ::operator delete(p); }
  virtual void to_device_async(void* dst, const void* pinned, size_t bytes) { to_device(dst, pinned, bytes); }
  virtual void to_host_async(void* pinned, const void* src, size_t bytes) { to_host(pinned, src, bytes); }
  // The host waits for the current stream's work so far, and for what that stream waits for (a
  // host read of what another task copied, ordered before this one by the executor's events).
  virtual void synchronize() {}
  // sum of x[0..n) in double, returned to the host (the per-token losses' mean).
  virtual double sum(const float* x, long n) = 0;
  // The optimizer's arithmetic: for each range (offset, count) of x the sum of x[i]^2 in double,
  // all returned to the host together (one wait on a device: the gradient norm's parts); x *= s;
  // tensor/adamw_update.h's update (kernels/adamw.h on the GPU).
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  virtual std::vector<double> sums_of_squares(const float* x, const Ranges& ranges) = 0;
  virtual void scale(float* x, long n, float s) = 0;
  virtual void adamw_update(float* p, const float* g, float* m, float* v, long n, const AdamWHyper& h, float lr,
                            long t, float wd) = 0;
  // Mixed precision (run.precision = "bf16", a GPU's backend: model/cuda_backend.h): the GEMMs
  // read bf16 copies of their fp32 operands. keep_weight_copies keeps a copy of [p, p + n) (the
  // parameter arena, once); weights_changed rewrites the kept copy of [p, p + n) after its fp32
  // values changed, ordered like the layer functions (MoeGpt::reset_graph for the whole arena
  // before each graph of passes; ZeRO-3's all-gathers for the parts they fill). Weights outside
  // a kept range (fastermoe's shadow experts) are cast as the GEMM goes. A backend that computes
  // in fp32 keeps nothing: mixed_precision() is false and both are no-ops.
  virtual bool mixed_precision() const { return false; }
  virtual void keep_weight_copies(const float* p, size_t n) { (void)p, (void)n; }
  virtual void weights_changed(const float* p, size_t n) { (void)p, (void)n; }
  // The row work of one MoE block in this backend's memory (moe/moe_rows.h), for its MoeLayer:
  // the host's rows on the CPU, kernels/'s MoeBlock phases on a GPU.
  virtual std::unique_ptr<MoeRows> make_moe_rows() = 0;

  // model/encoder.h
  virtual void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) = 0;
  // model/embedding_partition.h (position_embedding_*: the positions alone)
  virtual void position_embedding_forward(float* x, const float* wpe, long N, int T, int C) = 0;
  virtual void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C) = 0;
  virtual void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp) = 0;
  virtual void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P,
                                            int Cp) = 0;
  virtual void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp) = 0;
  virtual void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows,
                                            int Cp) = 0;
  // model/layernorm.h
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, int N, int C) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, const float* mean, const float* rstd, int N, int C) = 0;
  // tensor/matmul.h
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                              int OC) = 0;
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int N, int C, int OC) = 0;
  // model/attention.h
  virtual void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                                 int NH) = 0;
  virtual void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                                  const float* att, int B, int T, int C, int NH) = 0;
  // tensor/gelu.h, model/residual.h
  virtual void gelu_forward(float* out, const float* inp, long N) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, long N) = 0;
  virtual void residual_forward(float* out, const float* inp1, const float* inp2, long N) = 0;
  // model/crossentropy.h
  virtual void crossentropy_softmax_forward(float* losses, float* probs, const float* logits, const int* targets,
                                            int N, int V) = 0;
  virtual void crossentropy_softmax_backward(float* dlogits, const float* probs, const int* targets, float dloss,
                                             int N, int V) = 0;
  // model/vocab_parallel.h
  virtual void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo,
                                 int Vt) = 0;
  virtual void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo,
                                          int Vt) = 0;
  virtual void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt) = 0;
  virtual void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets,
                            int N, int Vt, int lo) = 0;
  virtual void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N,
                               int Vt) = 0;
  virtual void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt,
                                 int lo) = 0;
};

}  // namespace moebench

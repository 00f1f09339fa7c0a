#include "moebench/model/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "moebench/model/attention.h"
#include "moebench/model/crossentropy.h"
#include "moebench/model/embedding_partition.h"
#include "moebench/model/encoder.h"
#include "moebench/model/layernorm.h"
#include "moebench/model/residual.h"
#include "moebench/model/vocab_parallel.h"
#include "moebench/moe/moe_rows.h"
#include "moebench/tensor/gelu.h"
#include "moebench/tensor/matmul.h"

namespace moebench {
namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool device_memory() const override { return false; }

  void* allocate(size_t bytes, const char* what) override {
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes for " + what);
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void to_device(void* dst, const void* host, size_t bytes) override { std::memmove(dst, host, bytes); }
  void to_host(void* host, const void* src, size_t bytes) override { std::memmove(host, src, bytes); }
  double sum(const float* x, long n) override {
    double s = 0.0;
    for (long i = 0; i < n; ++i) s += x[i];
    return s;
  }
  std::vector<double> sums_of_squares(const float* x, const Ranges& ranges) override {
    std::vector<double> out;
    for (const auto& [offset, count] : ranges) {
      double s = 0.0;
      for (size_t i = offset; i < offset + count; ++i) s += (double)x[i] * x[i];
      out.push_back(s);
    }
    return out;
  }
  void scale(float* x, long n, float s) override {
    for (long i = 0; i < n; ++i) x[i] *= s;
  }
  void adamw_update(float* p, const float* g, float* m, float* v, long n, const AdamWHyper& h, float lr, long t,
                    float wd) override {
    moebench::adamw_update(p, g, m, v, n, h, lr, t, wd);
  }
  std::unique_ptr<MoeRows> make_moe_rows() override { return make_host_moe_rows(); }

  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) override {
    moebench::encoder_forward(out, inp, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) override {
    moebench::encoder_backward(dwte, dwpe, dout, inp, B, T, C);
  }
  void position_embedding_forward(float* x, const float* wpe, long N, int T, int C) override {
    moebench::position_embedding_forward(x, wpe, N, T, C);
  }
  void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C) override {
    moebench::position_embedding_backward(dwpe, dx, N, T, C);
  }
  void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp) override {
    moebench::embedding_partition_lookup(out, ids, wte_part, rows, Cp);
  }
  void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P,
                                    int Cp) override {
    moebench::embedding_partition_assemble(x, slices, wpe, N, T, P, Cp);
  }
  void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp) override {
    moebench::embedding_partition_split(slices, dx, N, P, Cp);
  }
  void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows,
                                    int Cp) override {
    moebench::embedding_partition_backward(dwte_part, dslices, ids, rows, Cp);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C) override {
    moebench::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override {
    moebench::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                      int OC) override {
    moebench::matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC) override {
    moebench::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                         int NH) override {
    moebench::attention_forward(out, preatt, att, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH) override {
    moebench::attention_backward(dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH);
  }
  void gelu_forward(float* out, const float* inp, long N) override { moebench::gelu_forward(out, inp, N); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, long N) override {
    moebench::gelu_backward(dinp, inp, dout, N);
  }
  void residual_forward(float* out, const float* inp1, const float* inp2, long N) override {
    moebench::residual_forward(out, inp1, inp2, N);
  }
  void crossentropy_softmax_forward(float* losses, float* probs, const float* logits, const int* targets, int N,
                                    int V) override {
    moebench::crossentropy_softmax_forward(losses, probs, logits, targets, N, V);
  }
  void crossentropy_softmax_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                                     int V) override {
    moebench::crossentropy_softmax_backward(dlogits, probs, targets, dloss, N, V);
  }
  void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo, int Vt) override {
    moebench::vocab_slice_embed(out, tok, wte_slice, N, C, lo, Vt);
  }
  void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo,
                                  int Vt) override {
    moebench::vocab_slice_embed_backward(dwte_slice, dout, tok, N, C, lo, Vt);
  }
  void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt) override {
    moebench::vocab_ce_row_max(rowmax, logits, N, Vt);
  }
  void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets, int N,
                    int Vt, int lo) override {
    moebench::vocab_ce_exp(probs, stats, logits, rowmax, targets, N, Vt, lo);
  }
  void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N,
                       int Vt) override {
    moebench::vocab_ce_finish(losses, probs, stats, rowmax, N, Vt);
  }
  void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt,
                         int lo) override {
    moebench::vocab_ce_backward(dlogits, probs, targets, dloss, N, Vt, lo);
  }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace moebench

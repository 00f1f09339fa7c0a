#pragma once
// moebench bench moe-layer: options shared by the CPU path (bench_moe_layer.cpp) and the GPU
// path (bench_moe_layer_cuda.cpp, built with CUDA only).
#include <string>

namespace moebench::cli {

struct MoeBenchOptions {
  int tokens = 4096, hidden = 256, ffn_mult = 4, experts = 8, top_k = 2, threads = 0, iters = 10;
  bool json = false;
  bool profile = false;  // --device cuda: each step of one forward + backward (kernel_profile.h)
  std::string device = "cpu";      // cpu | cuda
  std::string precision = "fp32";  // fp32 | bf16 (bf16 with --device cuda only)
  std::string expert_gemms = "auto";  // auto | grouped | per_expert (--device cuda only)
};

#ifdef MOEBENCH_HAVE_CUDA
// One cuda::MoeBlock forward+backward on the current GPU, and the measured GEMM rate it is
// compared with; the caller has checked the options and that a GPU is there.
int bench_moe_layer_cuda(const MoeBenchOptions& o);
#endif

}  // namespace moebench::cli

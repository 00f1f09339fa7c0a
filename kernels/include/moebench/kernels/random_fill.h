#pragma once
// Normal draws on the device, for inputs that need the distribution but not the host's values
// (bench moe-layer's expert weights: 10^9 and more values, which the host would take minutes to
// draw). Counter-based: element i of stream `key` is a pure function of (key, i) — the
// SplitMix64 finaliser of the two gives two uniform 32-bit words, Box-Muller turns them into one
// N(0, 1) value — so the result does not depend on the launch geometry and repeats exactly.
// The CPU comparison tests keep their host draws (tensor/rng.h).
#include <cuda_runtime.h>

#include <cstdint>

namespace moebench::cuda {

// dst[n] = scale * N(0, 1) draws of stream `key` (T = float or bf16, rounded once).
template <typename T>
void fill_normal(T* dst, long n, float scale, uint64_t key, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda

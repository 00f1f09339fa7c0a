#pragma once
// The dispatch layout on the device: core's moe/dispatch_layout.h (same name, arguments and
// output, bit for bit) with device arrays. Expert e owns slots [offsets[e], offsets[e+1]);
// inside an expert the slots follow the kept assignments in (n, k) order.
//
// One kernel, one block per expert: the block counts the kept assignments of the lower
// experts (its start offset) and then scans all assignments in order, placing its own; no
// atomics, so the layout is deterministic. Block E-1 also writes offsets[E] = S.
#include <cuda_runtime.h>

#include <cstdint>

namespace moebench::cuda {

// offsets[E+1], slot_of[N*K] (-1 when dropped), token_of[S] (S = offsets[E] <= N*K; size it
// N*K when S is not known yet) from expert[N*K] (every index in [0, E), dropped ones too: the
// device cannot check that) and kept[N*K]. All arrays are device memory. Throws
// std::invalid_argument for N < 0, K < 1 or E < 1.
void dispatch_layout(int* offsets, int* slot_of, int* token_of, const int* expert,
                     const uint8_t* kept, int N, int K, int E, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda

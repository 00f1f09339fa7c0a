#pragma once
// Fused softmax + cross-entropy on the device: model/crossentropy.h's functions with the same
// names and argument order plus the stream. T = float or bf16 for logits, probs and dlogits
// (probs in T: [N,V] is the largest activation); losses are fp32 for every T; math in fp32.
// targets[N] must lie in [0, V) (device memory).
#include <cuda_runtime.h>

namespace moebench::cuda {

// One block per row (V up to the full vocabulary; three passes over the row: max, sum of
// exp, write): probs[n,:] = softmax(logits[n,:]);  losses[n] = log(sum) - (logit[target] -
// max), as the CPU function (no log(0) when probs underflow).
template <typename T>
void crossentropy_softmax_forward(float* losses, T* probs, const T* logits, const int* targets,
                                  int N, int V, cudaStream_t stream = nullptr);

// Accumulates (+=): dlogits[n,:] += dloss * (probs[n,:] - onehot(targets[n])) (elementwise).
template <typename T>
void crossentropy_softmax_backward(T* dlogits, const T* probs, const int* targets, float dloss,
                                   int N, int V, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda

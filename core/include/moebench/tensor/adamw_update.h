#pragma once
// The AdamW update of n elements (decoupled weight decay, bias correction): the arithmetic
// every holder of optimizer states runs — AdamW (optim/adamw.h), the SSD tier's expert records
// (storage/expert_state_tier.h) and the CPU backend (tensor/backend.h) — so all give the same
// bits; kernels/'s adamw_update is its CUDA counterpart.

namespace moebench {

struct AdamWHyper {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
};

// t is the 1-based step; wd the view's weight decay (0 for views with decay = false).
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  p -= lr ((m / bc1) / (sqrt(v / bc2) + eps) + wd p)
// with bc = 1 - beta^t computed in float.
void adamw_update(float* p, const float* g, float* m, float* v, long n, const AdamWHyper& h, float lr, long t,
                  float wd);

}  // namespace moebench

#pragma once
// Token + position embedding (GPT-2 style), llm.c argument order: outputs, inputs, sizes.

namespace moebench {

// out[B,T,C] = wte[inp[b,t], :] + wpe[t, :]
// inp[B,T] token ids in [0, V); wte[V,C] token embeddings; wpe[maxT,C] positions (maxT >= T).
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                     int B, int T, int C);

// Accumulates (+=): dwte[inp[b,t], :] += dout[b,t,:];  dwpe[t, :] += sum_b dout[b,t,:].
// Deterministic: every element of dwte/dwpe receives its updates in (b,t) order whatever
// the thread count (threads split the channel dimension).
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp,
                      int B, int T, int C);

}  // namespace moebench

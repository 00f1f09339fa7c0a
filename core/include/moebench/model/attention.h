#pragma once
// Causal multi-head self-attention core (scores, softmax, weighted sum of values). The QKV
// and output projections are separate matmul_forward calls. llm.c argument order.

namespace moebench {

// qkv[B,T,3C] holds (q | k | v), each C wide; head h uses columns h*hs .. (h+1)*hs of each,
// hs = C/NH (C must be divisible by NH).
// preatt[B,NH,T,T] = q.k / sqrt(hs) (scaled scores); att[B,NH,T,T] = causal softmax of them;
// entries above the diagonal (t2 > t) of both are set to 0.
// out[B,T,C]: out[b,t,h*hs+i] = sum_{t2<=t} att[b,h,t,t2] * v[b,t2,h*hs+i].
void attention_forward(float* out, float* preatt, float* att, const float* qkv,
                       int B, int T, int C, int NH);

// Accumulates (+=) dqkv[B,T,3C] from dout[B,T,C]. dpreatt and datt are scratch buffers of
// [B,NH,T,T] floats that this function zeroes and fills itself. Parallel over (b, h) pairs,
// each of which owns its own columns of dqkv, so the result is deterministic.
void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout,
                        const float* qkv, const float* att, int B, int T, int C, int NH);

}  // namespace moebench

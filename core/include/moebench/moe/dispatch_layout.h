#pragma once
// The dispatch layout of one MoE block: where each kept (token, k) assignment goes in the
// buffers grouped by expert (the gathered inputs xg, the expert outputs y and their
// gradients). Plain C++, used by MoeLayer on the CPU and mirrored exactly by the device
// function of the same name (kernels/include/moebench/kernels/dispatch_layout.h).
//
// Layout: expert e owns slots [offsets[e], offsets[e+1]); inside an expert the slots follow
// the assignments in (n, k) order (token-major), so the layout depends only on expert[] and
// kept[] and is deterministic.
#include <cstdint>

namespace moebench {

// offsets[E+1]  (out) offsets[0] = 0, offsets[e+1] - offsets[e] = kept assignments of e;
//                     S = offsets[E] slots in all.
// slot_of[N*K]  (out) slot of assignment i = n*K + k, -1 when it was dropped (kept[i] == 0).
// token_of[S]   (out) token n of each slot.
// expert[N*K]   the chosen expert of each assignment, in [0, E) (dropped ones too);
// kept[N*K]     1 = admitted, 0 = dropped by capacity.
// Throws std::invalid_argument for an expert index outside [0, E) or negative sizes.
void dispatch_layout(int* offsets, int* slot_of, int* token_of, const int* expert,
                     const uint8_t* kept, int N, int K, int E);

}  // namespace moebench

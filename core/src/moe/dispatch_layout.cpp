#include "moebench/moe/dispatch_layout.h"

#include <stdexcept>
#include <string>

namespace moebench {

void dispatch_layout(int* offsets, int* slot_of, int* token_of, const int* expert,
                     const uint8_t* kept, int N, int K, int E) {
  if (N < 0 || K < 1 || E < 1)
    throw std::invalid_argument("dispatch_layout: need N >= 0, K >= 1, E >= 1 (got N = " +
                                std::to_string(N) + ", K = " + std::to_string(K) +
                                ", E = " + std::to_string(E) + ")");
  const long NK = (long)N * K;
  for (int e = 0; e <= E; ++e) offsets[e] = 0;
  for (long i = 0; i < NK; ++i) {
    const int e = expert[i];
    if (e < 0 || e >= E)
      throw std::invalid_argument("dispatch_layout: expert " + std::to_string(e) + " of assignment " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(E) + ")");
    if (kept[i]) offsets[e + 1] += 1;
  }
  // Counting sort without scratch: the prefix sum makes offsets[e + 1] the end of e; shifted
  // up by one entry, offsets[e + 1] is the start of e and serves as e's cursor. After the
  // placement pass each cursor has moved to the end of its expert, which is the layout.
  for (int e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  for (int e = E; e > 0; --e) offsets[e] = offsets[e - 1];
  offsets[0] = 0;
  for (long i = 0; i < NK; ++i) {
    if (!kept[i]) {
      slot_of[i] = -1;
      continue;
    }
    const int slot = offsets[expert[i] + 1]++;
    slot_of[i] = slot;
    token_of[slot] = (int)(i / K);
  }
}

}  // namespace moebench

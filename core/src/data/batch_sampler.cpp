#include "moebench/data/batch_sampler.h"

#include <string>

#include "moebench/data/data_error.h"
#include "moebench/tensor/rng.h"

namespace moebench {

void sample_batch(const std::vector<int32_t>& tokens, int B, int T, uint64_t seed, uint64_t step,
                  uint64_t stream, int32_t* inputs, int32_t* targets, uint64_t first_row) {
  if (B < 1 || T < 1)
    throw DataError("sample_batch: batch size " + std::to_string(B) + " and sequence length " +
                    std::to_string(T) + " must both be >= 1");
  if (tokens.size() < (size_t)T + 1)
    throw DataError("sample_batch: " + std::to_string(tokens.size()) +
                    " tokens are fewer than one window of seq_len + 1 = " + std::to_string(T + 1));
  const uint64_t starts = tokens.size() - (size_t)T;  // s in [0, n - T - 1]
  for (int b = 0; b < B; ++b) {
    Rng rng = Rng::keyed({seed, step, stream, first_row + (uint64_t)b});
    const size_t s = (size_t)rng.below(starts);
    const int32_t* src = tokens.data() + s;
    int32_t* in = inputs + (size_t)b * T;
    int32_t* tg = targets + (size_t)b * T;
    for (int t = 0; t < T; ++t) {
      in[t] = src[t];
      tg[t] = src[t + 1];
    }
  }
}

}  // namespace moebench

#pragma once
// Stateless batch sampling for exact resume: a batch depends only on (seed, step, stream).
// Row b starts at a window drawn from Rng::keyed({seed, step, stream, b}), uniform over all
// starts s in [0, n - T - 1], and
//   inputs[b*T + t] = tokens[s + t],   targets[b*T + t] = tokens[s + t + 1].
// stream tells the consumers apart: 0 = train, 1 = eval; later streams (e.g. per data-parallel
// rank) use further values. No hidden state: resuming at step k gives the batches a run that
// never stopped would have seen.
#include <cstdint>
#include <vector>

namespace moebench {

inline constexpr uint64_t kTrainStream = 0;
inline constexpr uint64_t kEvalStream = 1;

// Rows first_row .. first_row + B - 1 of the batch (a data-parallel rank takes its slice of
// the global batch; the rows equal those of one rank sampling the whole batch).
// inputs and targets hold B*T tokens each. Throws DataError when tokens.size() < T + 1 or
// B, T < 1.
void sample_batch(const std::vector<int32_t>& tokens, int B, int T, uint64_t seed, uint64_t step,
                  uint64_t stream, int32_t* inputs, int32_t* targets, uint64_t first_row = 0);

}  // namespace moebench

#pragma once
// Deterministic, portable random numbers (xoshiro256** seeded by splitmix64): the same seed
// gives the same stream on every platform and standard library, which exact resume relies on.
#include <cstdint>
#include <initializer_list>

namespace moebench {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  // A stream derived from several keys, e.g. Rng::keyed({seed, step, rank}).
  static Rng keyed(std::initializer_list<uint64_t> keys);

  uint64_t next_u64();
  float uniform();                 // [0, 1)
  float normal();                  // N(0, 1), Box-Muller
  uint64_t below(uint64_t n);      // uniform integer in [0, n), n > 0

 private:
  uint64_t s_[4];
};

}  // namespace moebench

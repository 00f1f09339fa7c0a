#include "moebench/tensor/rng.h"

#include <cmath>

namespace moebench {
namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

Rng Rng::keyed(std::initializer_list<uint64_t> keys) {
  uint64_t h = 0x243F6A8885A308D3ull;
  for (uint64_t k : keys) {
    uint64_t x = h ^ k;
    h = splitmix64(x);
  }
  return Rng(h);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float Rng::uniform() { return (float)(next_u64() >> 40) * (1.0f / 16777216.0f); }

float Rng::normal() {
  // Box-Muller in double for accuracy; u1 in (0, 1].
  double u1 = ((next_u64() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = (next_u64() >> 11) * (1.0 / 9007199254740992.0);
  return (float)(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

uint64_t Rng::below(uint64_t n) {
  // Lemire's nearly-divisionless method would be faster; rejection keeps it exact and simple.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64(); while (x >= limit);
  return x % n;
}

}  // namespace moebench

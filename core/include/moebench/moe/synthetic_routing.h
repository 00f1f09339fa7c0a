#pragma once
// Synthetic expert choice for studying imbalance reproducibly ([moe] routing). It overrides
// which experts the router's top-k picks; the learned router still runs (gates are its
// probabilities at the forced experts), so a step stays a real training step.
//   learned     the router's own top-k (no override)
//   uniform     k distinct experts uniformly at random
//   zipf:S      k distinct experts drawn with weights 1/(e+1)^S (expert 0 hottest)
//   hot:E,F     the first choice is expert E with probability F, else uniform over the others;
//               remaining choices uniform (hot:0,1 with top_k 1 = every token on expert 0)
//   rotating    hot:(step + layer) mod experts, 0.5: the hot spot moves every step
//   balanced    token g takes experts (g*k + j) mod E, j < k: every expert gets exactly
//               tokens*k/E assignments from every rank when E divides tokens*k (the
//               balanced routing the papers' traffic formulas assume)
// A token's choice depends only on (seed, step, layer, global token index), so it is the same
// whatever the number of ranks the global batch is split over.
#include <cstdint>
#include <string>

namespace moebench {

struct RoutingSpec {
  enum class Kind { learned, uniform, zipf, hot, rotating, balanced } kind = Kind::learned;
  double zipf_s = 0.0;
  int hot_expert = 0;
  double hot_fraction = 0.0;
  bool operator==(const RoutingSpec&) const = default;
};

// Parses "learned", "uniform", "zipf:1.2", "hot:3,0.5", "rotating", "balanced"; throws std::invalid_argument
// saying what was expected.
RoutingSpec parse_routing(const std::string& text);
// The inverse: the text parse_routing reads back as `spec` ("zipf:1.2", "hot:3,0.5").
std::string routing_text(const RoutingSpec& spec);

// forced[n*K + k] for the N tokens whose global indices are first_token .. first_token+N-1.
// Experts of one token are distinct. Not for Kind::learned.
void synthetic_expert_choice(int* forced, const RoutingSpec& spec, int N, int K, int E,
                             uint64_t seed, long step, int layer, long first_token);

}  // namespace moebench

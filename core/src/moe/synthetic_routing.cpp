#include "moebench/moe/synthetic_routing.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "moebench/tensor/rng.h"

namespace moebench {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw std::invalid_argument("routing \"" + text + "\": " + why +
                              " (expected learned | uniform | zipf:S | hot:E,F | rotating | balanced)");
}

double number(const std::string& text, const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    bad(text, "\"" + s + "\" is not a number");
  }
  if (used != s.size() || !std::isfinite(v)) bad(text, "\"" + s + "\" is not a number");
  return v;
}

// Draws one expert from weights w (w[e] = 0 for experts already taken).
int draw(Rng& rng, const std::vector<double>& w) {
  double total = 0;
  for (double x : w) total += x;
  double u = (double)rng.uniform() * total;
  int last = -1;
  for (int e = 0; e < (int)w.size(); ++e) {
    if (w[e] <= 0) continue;
    last = e;
    if (u < w[e]) return e;
    u -= w[e];
  }
  return last;
}

// Shortest text that reads back as v ("1.2", "0.5").
std::string shortest(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

}  // namespace

RoutingSpec parse_routing(const std::string& text) {
  RoutingSpec s;
  const auto colon = text.find(':');
  const std::string head = text.substr(0, colon), arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (head == "learned" || head == "uniform" || head == "rotating" || head == "balanced") {
    if (colon != std::string::npos) bad(text, head + " takes no argument");
    s.kind = head == "learned" ? RoutingSpec::Kind::learned
             : head == "uniform" ? RoutingSpec::Kind::uniform
             : head == "balanced" ? RoutingSpec::Kind::balanced : RoutingSpec::Kind::rotating;
  } else if (head == "zipf") {
    s.kind = RoutingSpec::Kind::zipf;
    s.zipf_s = number(text, arg);
    if (s.zipf_s <= 0) bad(text, "the zipf exponent must be > 0");
  } else if (head == "hot") {
    s.kind = RoutingSpec::Kind::hot;
    const auto comma = arg.find(',');
    if (comma == std::string::npos) bad(text, "hot needs an expert and a fraction, e.g. hot:3,0.5");
    const double e = number(text, arg.substr(0, comma));
    if (e < 0 || e != std::floor(e)) bad(text, "the hot expert must be a non-negative integer");
    s.hot_expert = (int)e;
    s.hot_fraction = number(text, arg.substr(comma + 1));
    if (s.hot_fraction < 0 || s.hot_fraction > 1) bad(text, "the hot fraction must be in [0, 1]");
  } else {
    bad(text, "unknown kind \"" + head + "\"");
  }
  return s;
}

std::string routing_text(const RoutingSpec& spec) {
  switch (spec.kind) {
    case RoutingSpec::Kind::learned: return "learned";
    case RoutingSpec::Kind::uniform: return "uniform";
    case RoutingSpec::Kind::zipf: return "zipf:" + shortest(spec.zipf_s);
    case RoutingSpec::Kind::hot: return "hot:" + std::to_string(spec.hot_expert) + "," + shortest(spec.hot_fraction);
    case RoutingSpec::Kind::rotating: return "rotating";
    case RoutingSpec::Kind::balanced: return "balanced";
  }
  return {};
}

void synthetic_expert_choice(int* forced, const RoutingSpec& spec, int N, int K, int E,
                             uint64_t seed, long step, int layer, long first_token) {
  if (spec.kind == RoutingSpec::Kind::learned) throw std::logic_error("learned routing has no synthetic choice");
  if (K > E) throw std::invalid_argument("top_k exceeds the experts");
  int hot = spec.hot_expert;
  double fraction = spec.hot_fraction;
  if (spec.kind == RoutingSpec::Kind::rotating) {
    hot = (int)((step + layer) % E);
    fraction = 0.5;
  }
  if ((spec.kind == RoutingSpec::Kind::hot) && hot >= E)
    throw std::invalid_argument("routing hot expert " + std::to_string(hot) + " >= experts " + std::to_string(E));
  if (spec.kind == RoutingSpec::Kind::balanced) {
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) forced[n * K + k] = (int)(((first_token + n) * K + k) % E);
    return;
  }
  const bool hot_kind = spec.kind == RoutingSpec::Kind::hot || spec.kind == RoutingSpec::Kind::rotating;
  if (spec.kind != RoutingSpec::Kind::zipf) {
    // Equal weights: draw()'s walk over the experts left (weight 1 each, u = uniform x their
    // count) picks the floor(u)-th of them, so that is computed directly (the same choices,
    // without walking E weights per token; the simulator routes every rank's tokens).
    std::vector<int> taken;  // this token's experts so far, ascending
    taken.reserve((size_t)K);
    for (int n = 0; n < N; ++n) {
      Rng rng = Rng::keyed({seed, 0x5e7a11ull, (uint64_t)step, (uint64_t)layer, (uint64_t)(first_token + n)});
      taken.clear();
      for (int k = 0; k < K; ++k) {
        int e;
        if (hot_kind && k == 0 && (double)rng.uniform() < fraction) {
          e = hot;
        } else if (hot_kind && k == 0 && E > 1) {  // "else uniform over the others"
          e = (int)((double)rng.uniform() * (double)(E - 1));
          e += hot <= e;
        } else {
          e = (int)((double)rng.uniform() * (double)(E - (int)taken.size()));
          for (int x : taken) e += x <= e;
        }
        forced[n * K + k] = e;
        taken.insert(std::upper_bound(taken.begin(), taken.end(), e), e);
      }
    }
    return;
  }
  std::vector<double> base(E, 1.0);
  for (int e = 0; e < E; ++e) base[e] = 1.0 / std::pow(e + 1.0, spec.zipf_s);
  std::vector<double> w(E);
  for (int n = 0; n < N; ++n) {
    Rng rng = Rng::keyed({seed, 0x5e7a11ull, (uint64_t)step, (uint64_t)layer, (uint64_t)(first_token + n)});
    w = base;
    for (int k = 0; k < K; ++k) {
      const int e = draw(rng, w);
      forced[n * K + k] = e;
      w[e] = 0;
    }
  }
}

}  // namespace moebench

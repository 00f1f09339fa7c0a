#include "moebench/data/synthetic_corpus.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace moebench {
namespace {

// Stream tags: languages, train and val each draw from their own keyed stream.
constexpr uint64_t kTagLanguage = 0x4C414E47ull;  // "LANG"
constexpr uint64_t kTagTrain = 0x5452414Eull;     // "TRAN"
constexpr uint64_t kTagVal = 0x56414C00ull;       // "VAL"
constexpr uint64_t kTagTask = 0x5441534Bull;      // "TASK"

constexpr int kDocLengths = kSyntheticDocMax - kSyntheticDocMin + 1;

void check_params(const DataConfig& cfg, int vocab_size) {
  if (vocab_size < 2)
    throw DataError("synthetic corpus: vocab_size " + std::to_string(vocab_size) + " must be >= 2");
  if (cfg.languages < 1)
    throw DataError("synthetic corpus: data.languages " + std::to_string(cfg.languages) + " must be >= 1");
  if (cfg.branching < 1)
    throw DataError("synthetic corpus: data.branching " + std::to_string(cfg.branching) + " must be >= 1");
}

// Entropy (nats) of the next token from `state`: the likely successors get
// noise/V + (1-noise) p_i, every other token noise/V.
double state_entropy(const MarkovLanguage& lang, int state) {
  const double V = lang.vocab_size;
  const double base = kSyntheticNoise / V;
  const int b = lang.branching;
  double h = (V - b) * (-base * std::log(base));
  for (int i = 0; i < b; ++i) {
    const double p = base + (1.0 - kSyntheticNoise) * lang.probs[(size_t)state * b + i];
    h -= p * std::log(p);
  }
  return h;
}

}  // namespace

int32_t MarkovLanguage::next(int32_t state, Rng& rng) const {
  if (rng.uniform() < (float)kSyntheticNoise) return (int32_t)rng.below((uint64_t)vocab_size);
  const float u = rng.uniform();
  const size_t row = (size_t)state * branching;
  float acc = 0.0f;
  for (int i = 0; i < branching - 1; ++i) {
    acc += probs[row + i];
    if (u < acc) return successors[row + i];
  }
  return successors[row + branching - 1];
}

std::vector<MarkovLanguage> make_synthetic_languages(const DataConfig& cfg, int vocab_size, uint64_t seed) {
  check_params(cfg, vocab_size);
  const int b = std::min(cfg.branching, vocab_size);
  std::vector<MarkovLanguage> langs((size_t)cfg.languages);
  for (int l = 0; l < cfg.languages; ++l) {
    MarkovLanguage& lang = langs[(size_t)l];
    lang.vocab_size = vocab_size;
    lang.branching = b;
    lang.successors.resize((size_t)vocab_size * b);
    lang.probs.resize((size_t)vocab_size * b);
    Rng rng = Rng::keyed({seed, kTagLanguage, (uint64_t)l});
    for (int s = 0; s < vocab_size; ++s) {
      int32_t* succ = &lang.successors[(size_t)s * b];
      float* prob = &lang.probs[(size_t)s * b];
      for (int i = 0; i < b; ++i) {  // distinct successors
        int32_t t;
        do t = (int32_t)rng.below((uint64_t)vocab_size); while (std::find(succ, succ + i, t) != succ + i);
        succ[i] = t;
      }
      double w[64];
      std::vector<double> wbig;
      double* wp = w;
      if (b > 64) { wbig.resize((size_t)b); wp = wbig.data(); }
      double sum = 0.0;
      for (int i = 0; i < b; ++i) {  // Dirichlet(1): normalised exponentials
        wp[i] = -std::log(1.0 - (double)rng.uniform()) + 1e-6;
        sum += wp[i];
      }
      for (int i = 0; i < b; ++i) prob[i] = (float)(wp[i] / sum);
    }
  }
  return langs;
}

void generate_synthetic_tokens(const std::vector<MarkovLanguage>& languages, int64_t n, Rng& rng,
                               std::vector<int32_t>& out, std::vector<int32_t>* doc_language) {
  if (languages.empty() || n <= 0) return;
  const int V = languages.front().vocab_size;
  const size_t target = out.size() + (size_t)n;
  out.reserve(target);
  if (doc_language) doc_language->reserve(doc_language->size() + (size_t)n);
  while (out.size() < target) {
    const int len = kSyntheticDocMin + (int)rng.below(kDocLengths);
    const int l = (int)rng.below(languages.size());
    const MarkovLanguage& lang = languages[(size_t)l];
    int32_t tok = (int32_t)rng.below((uint64_t)V);
    for (int i = 0; i < len && out.size() < target; ++i) {
      if (i > 0) tok = lang.next(tok, rng);
      out.push_back(tok);
      if (doc_language) doc_language->push_back(l);
    }
  }
}

TokenCorpus make_synthetic_corpus(const DataConfig& cfg, int vocab_size, int seq_len, uint64_t seed) {
  check_params(cfg, vocab_size);
  if (cfg.corpus_tokens < 1)
    throw DataError("synthetic corpus: data.corpus_tokens " + std::to_string(cfg.corpus_tokens) +
                    " must be >= 1");
  if (!(cfg.val_fraction >= 0.0f && cfg.val_fraction < 1.0f))
    throw DataError("synthetic corpus: data.val_fraction " + std::to_string(cfg.val_fraction) +
                    " must be in [0, 1)");
  const int64_t n_val = (int64_t)std::llround((double)cfg.corpus_tokens * cfg.val_fraction);
  const int64_t n_train = cfg.corpus_tokens - n_val;
  const int64_t need = (int64_t)seq_len + 1;
  auto too_small = [&](const char* split, int64_t n) {
    return DataError("synthetic corpus: " + std::string(split) + " split holds " + std::to_string(n) +
                     " tokens (corpus_tokens " + std::to_string(cfg.corpus_tokens) + ", val_fraction " +
                     std::to_string(cfg.val_fraction) + "), fewer than seq_len + 1 = " +
                     std::to_string(need));
  };
  if (n_train < need) throw too_small("train", n_train);
  if (n_val < need) throw too_small("held-out", n_val);

  const auto langs = make_synthetic_languages(cfg, vocab_size, seed);
  TokenCorpus c;
  c.vocab_size = vocab_size;
  Rng train_rng = Rng::keyed({seed, kTagTrain});
  generate_synthetic_tokens(langs, n_train, train_rng, c.train);
  Rng val_rng = Rng::keyed({seed, kTagVal});
  generate_synthetic_tokens(langs, n_val, val_rng, c.val);
  if (cfg.tasks.empty()) return c;
  // Multi-task data (dist/task_assignment.h): task t's streams are documents of language t
  // alone, an equal share of each split, from their own keyed streams (so a task never lacks
  // held-out text, whatever the mixture drew).
  const int T = (int)cfg.tasks.size();
  if (cfg.languages < T)
    throw DataError("synthetic corpus: data.languages " + std::to_string(cfg.languages) + " must be >= the " +
                    std::to_string(T) + " tasks of data.tasks");
  const int64_t task_train = n_train / T, task_val = n_val / T;
  if (task_train < need || task_val < need)
    throw DataError("synthetic corpus: each of the " + std::to_string(T) + " tasks gets " +
                    std::to_string(task_train) + " train and " + std::to_string(task_val) +
                    " held-out tokens (data.corpus_tokens " + std::to_string(cfg.corpus_tokens) +
                    " split over the tasks), fewer than seq_len + 1 = " + std::to_string(need) +
                    "; raise data.corpus_tokens");
  c.task_train.resize((size_t)T);
  c.task_val.resize((size_t)T);
  for (int t = 0; t < T; ++t) {
    const std::vector<MarkovLanguage> one = {langs[(size_t)t]};
    Rng tr = Rng::keyed({seed, kTagTrain, kTagTask, (uint64_t)t});
    generate_synthetic_tokens(one, task_train, tr, c.task_train[(size_t)t]);
    Rng va = Rng::keyed({seed, kTagVal, kTagTask, (uint64_t)t});
    generate_synthetic_tokens(one, task_val, va, c.task_val[(size_t)t]);
  }
  return c;
}

double synthetic_entropy_rate(const std::vector<MarkovLanguage>& languages) {
  if (languages.empty()) return 0.0;
  // Share of tokens at document position t: P(len > t) / E[len], len uniform in [min, max].
  const double mean_len = 0.5 * (kSyntheticDocMin + kSyntheticDocMax);
  auto share = [&](int t) {
    const double p_longer = t < kSyntheticDocMin ? 1.0 : (double)(kSyntheticDocMax - t) / kDocLengths;
    return p_longer / mean_len;
  };
  double total = 0.0;
  for (const MarkovLanguage& lang : languages) {
    const int V = lang.vocab_size;
    const int b = lang.branching;
    std::vector<double> h((size_t)V);
    for (int s = 0; s < V; ++s) h[(size_t)s] = state_entropy(lang, s);
    std::vector<double> d((size_t)V, 1.0 / V), nd((size_t)V);
    double rate = share(0) * std::log((double)V);  // the first token of a document is uniform
    bool settled = false;
    double settled_h = 0.0;
    for (int t = 1; t < kSyntheticDocMax; ++t) {
      if (!settled) {
        // Entropy of token t given token t-1 ~ d (= d_{t-1}).
        double e = 0.0;
        for (int s = 0; s < V; ++s) e += d[(size_t)s] * h[(size_t)s];
        rate += share(t) * e;
        // d_t = d_{t-1} P.
        std::fill(nd.begin(), nd.end(), kSyntheticNoise / V);
        for (int s = 0; s < V; ++s) {
          const double m = (1.0 - kSyntheticNoise) * d[(size_t)s];
          for (int i = 0; i < b; ++i)
            nd[(size_t)lang.successors[(size_t)s * b + i]] += m * lang.probs[(size_t)s * b + i];
        }
        double change = 0.0;
        for (int s = 0; s < V; ++s) change += std::abs(nd[(size_t)s] - d[(size_t)s]);
        d.swap(nd);
        if (change < 1e-10) {
          settled = true;
          settled_h = 0.0;
          for (int s = 0; s < V; ++s) settled_h += d[(size_t)s] * h[(size_t)s];
        }
      } else {
        rate += share(t) * settled_h;
      }
    }
    total += rate;
  }
  return total / (double)languages.size();
}

double synthetic_entropy_rate(const DataConfig& cfg, int vocab_size, uint64_t seed) {
  return synthetic_entropy_rate(make_synthetic_languages(cfg, vocab_size, seed));
}

}  // namespace moebench

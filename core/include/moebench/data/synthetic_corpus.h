#pragma once
// The synthetic corpus: a mixture of Markov-chain "languages" over the vocabulary, fully
// determined by (DataConfig, vocab_size, seed).
//
// Each of cfg.languages languages has its own transition table: every state (the previous
// token) has cfg.branching distinct likely successors, chosen at random, with random
// probabilities (Dirichlet(1) weights); with probability kSyntheticNoise the next token is
// instead drawn uniformly from the whole vocabulary. The corpus is a sequence of documents
// (length uniform in [kSyntheticDocMin, kSyntheticDocMax], no separator token), each generated
// entirely by one randomly chosen language and starting from a uniform token; documents are
// concatenated and the last one is cut to length. A model can learn it (the entropy rate is far
// below ln(vocab_size)) and experts can specialise per language.
//
// Sizes: corpus_tokens in total; the held-out split gets round(corpus_tokens * val_fraction)
// of them and train the rest. Train and val come from different random streams with the same
// languages (val is not a slice of train).
#include <cstdint>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/data/corpus.h"
#include "moebench/tensor/rng.h"

namespace moebench {

inline constexpr double kSyntheticNoise = 0.02;
inline constexpr int kSyntheticDocMin = 64;
inline constexpr int kSyntheticDocMax = 512;

struct MarkovLanguage {
  int vocab_size = 0;
  int branching = 0;
  std::vector<int32_t> successors;  // [vocab_size, branching] likely successors of each state
  std::vector<float> probs;         // [vocab_size, branching] their probabilities; rows sum to 1

  int32_t next(int32_t state, Rng& rng) const;  // one transition, noise included
};

// The languages of a synthetic corpus (seeded by Rng::keyed({seed, tag, language})).
// Throws DataError for languages < 1, branching < 1 or vocab_size < 2; branching is capped at
// vocab_size.
std::vector<MarkovLanguage> make_synthetic_languages(const DataConfig& cfg, int vocab_size,
                                                     uint64_t seed);

// Appends n tokens of documents drawn from `languages` using `rng`. When doc_language is not
// null it receives, per generated token, the index of the language that produced it.
void generate_synthetic_tokens(const std::vector<MarkovLanguage>& languages, int64_t n, Rng& rng,
                               std::vector<int32_t>& out, std::vector<int32_t>* doc_language = nullptr);

// Train and val splits (sizes above). With cfg.tasks also per-task splits: task t's train and
// val streams are documents of language t alone, of n_train / tasks and n_val / tasks tokens,
// each from its own keyed random stream. Throws DataError when a split would hold fewer than
// seq_len + 1 tokens.
TokenCorpus make_synthetic_corpus(const DataConfig& cfg, int vocab_size, int seq_len, uint64_t seed);

// Entropy rate of the mixture in nats per token: the expected entropy of the next token given
// its language and the previous token, H = mean over languages of
//   sum_t w_t * [t == 0 ? ln V : sum_s d_{t-1}(s) H(next | s)],
// where t is the position in a document, w_t the share of tokens at position t under the
// document-length distribution, and d_t the state distribution t steps after a uniform start
// (computed exactly by iterating the transition matrix until it settles).
// This is the loss a model that knew each document's language would reach; a real model also
// pays for identifying the language from its context (at most ln(languages) nats per window,
// spread over the window), so its achievable loss is slightly above this and far below
// ln(vocab_size), the loss of a model that learned nothing.
double synthetic_entropy_rate(const std::vector<MarkovLanguage>& languages);
double synthetic_entropy_rate(const DataConfig& cfg, int vocab_size, uint64_t seed);

}  // namespace moebench

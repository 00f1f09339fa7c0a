#pragma once
// TokenCorpus and load_corpus(): the train and held-out token streams of a run, from the
// source named by [data] source:
//   "synthetic"  a mixture of Markov-chain languages (synthetic_corpus.h); the held-out split
//                is generated from its own random stream, not sliced from train.
//   "bin"        llm.c / nanoGPT token shards (bin_shard.h): path, optional val_path.
//   "text"       a raw text file, one token per byte (vocab 256; text_corpus.h); optional
//                val_path (a second text file).
// For bin/text without val_path the last val_fraction of the tokens is the held-out split.
// Every split must hold at least seq_len + 1 tokens (one full input/target window), and every
// token must lie in [0, vocab_size); otherwise load_corpus throws a DataError saying so.
#include <cstdint>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/data/data_error.h"

namespace moebench {

struct TokenCorpus {
  std::vector<int32_t> train;
  std::vector<int32_t> val;
  // With data.tasks (synthetic only): task t's streams, documents of language t alone,
  // 1/tasks of each split's size each (synthetic_corpus.h). Each must hold seq_len + 1 tokens
  // (DataError naming data.corpus_tokens otherwise).
  std::vector<std::vector<int32_t>> task_train, task_val;
  int vocab_size = 0;
};

TokenCorpus load_corpus(const DataConfig& cfg, int vocab_size, int seq_len, uint64_t seed);

// The bytes every rank holds for the corpus load_corpus builds (PREDICTED; for the launch
// memory check, perf/trainer_memory.h): 4 per token of the train and held-out streams, again for
// data.tasks' per-task streams, and for "synthetic" the languages' transition tables (8 bytes per
// entry, config/data_limits.h synthetic_table_entries); for "bin" and "text"
// the tokens of data.path and data.val_path from their file sizes (0 for a file not found).
double corpus_bytes(const DataConfig& cfg, int vocab_size);

// Throws DataError("<what>: token X at index I >= vocab_size V") (or "< 0") for the first
// token outside [0, vocab_size).
void check_token_range(const std::vector<int32_t>& tokens, int vocab_size, const std::string& what);

}  // namespace moebench

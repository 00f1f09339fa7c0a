#include "moebench/data/corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "moebench/config/data_limits.h"
#include "moebench/data/bin_shard.h"
#include "moebench/data/synthetic_corpus.h"
#include "moebench/data/text_corpus.h"

namespace moebench {
namespace {

std::string percent(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", 100.0 * f);
  return buf;
}

// Splits off the held-out tail (or reads val_path) and checks both splits.
TokenCorpus split_and_check(std::vector<int32_t> tokens, const DataConfig& cfg, int vocab_size,
                            int seq_len,
                            const std::function<std::vector<int32_t>(const std::string&)>& read) {
  const int64_t need = (int64_t)seq_len + 1;
  TokenCorpus c;
  c.vocab_size = vocab_size;
  check_token_range(tokens, vocab_size, cfg.path);
  if (!cfg.val_path.empty()) {
    c.val = read(cfg.val_path);
    check_token_range(c.val, vocab_size, cfg.val_path);
    c.train = std::move(tokens);
    if ((int64_t)c.train.size() < need)
      throw DataError(cfg.path + ": train split holds " + std::to_string(c.train.size()) +
                      " tokens, fewer than seq_len + 1 = " + std::to_string(need));
    if ((int64_t)c.val.size() < need)
      throw DataError(cfg.val_path + ": held-out split holds " + std::to_string(c.val.size()) +
                      " tokens, fewer than seq_len + 1 = " + std::to_string(need));
    return c;
  }
  if (!(cfg.val_fraction > 0.0f && cfg.val_fraction < 1.0f))
    throw DataError(cfg.path + ": data.val_fraction " + std::to_string(cfg.val_fraction) +
                    " must be in (0, 1) when no data.val_path is given");
  const size_t n = tokens.size();
  const size_t n_val = (size_t)std::llround((double)n * cfg.val_fraction);
  const size_t n_train = n - n_val;
  if ((int64_t)n_train < need)
    throw DataError(cfg.path + ": train split (first " + percent(1.0f - cfg.val_fraction) + " of " +
                    std::to_string(n) + " tokens) holds " + std::to_string(n_train) +
                    " tokens, fewer than seq_len + 1 = " + std::to_string(need));
  if ((int64_t)n_val < need)
    throw DataError(cfg.path + ": held-out split (last " + percent(cfg.val_fraction) + " of " +
                    std::to_string(n) + " tokens) holds " + std::to_string(n_val) +
                    " tokens, fewer than seq_len + 1 = " + std::to_string(need));
  c.val.assign(tokens.begin() + (std::ptrdiff_t)n_train, tokens.end());
  tokens.resize(n_train);
  tokens.shrink_to_fit();
  c.train = std::move(tokens);
  return c;
}

}  // namespace

void check_token_range(const std::vector<int32_t>& tokens, int vocab_size, const std::string& what) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t t = tokens[i];
    if (t >= vocab_size)
      throw DataError(what + ": token " + std::to_string(t) + " at index " + std::to_string(i) +
                      " >= vocab_size " + std::to_string(vocab_size));
    if (t < 0)
      throw DataError(what + ": token " + std::to_string(t) + " at index " + std::to_string(i) + " < 0");
  }
}

double corpus_bytes(const DataConfig& cfg, int vocab_size) {
  constexpr double kToken = sizeof(int32_t);
  if (cfg.source == DataSource::synthetic) {
    const double tokens = (double)cfg.corpus_tokens * (cfg.tasks.empty() ? 1 : 2);  // the tasks' streams again
    return kToken * tokens + (sizeof(int32_t) + sizeof(float)) * synthetic_table_entries(cfg, vocab_size);
  }
  // A text file's bytes, or a bin shard's uint16 tokens after its 1024-byte header (at most).
  auto tokens_of = [&](const std::string& path) {
    std::error_code ec;
    const uintmax_t size = path.empty() ? 0 : std::filesystem::file_size(path, ec);
    if (ec) return 0.0;
    return cfg.source == DataSource::text ? (double)size : std::max(0.0, ((double)size - 1024) / 2);
  };
  return kToken * (tokens_of(cfg.path) + tokens_of(cfg.val_path));
}

TokenCorpus load_corpus(const DataConfig& cfg, int vocab_size, int seq_len, uint64_t seed) {
  if (vocab_size < 1)
    throw DataError("data: vocab_size " + std::to_string(vocab_size) + " must be >= 1");
  if (seq_len < 1) throw DataError("data: seq_len " + std::to_string(seq_len) + " must be >= 1");
  if (cfg.source == DataSource::synthetic) return make_synthetic_corpus(cfg, vocab_size, seq_len, seed);
  const bool bin = cfg.source == DataSource::bin;
  if (cfg.path.empty())
    throw DataError("data.path: source \"" + choice_name(cfg.source) + "\" needs data.path = " +
                    (bin ? "an llm.c .bin token shard" : "a text file"));
  auto read = [bin](const std::string& p) { return bin ? read_bin_shard(p) : read_text_bytes(p); };
  return split_and_check(read(cfg.path), cfg, vocab_size, seq_len, read);
}

}  // namespace moebench

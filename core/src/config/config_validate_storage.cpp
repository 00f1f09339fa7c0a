// [storage] (config.h StorageConfig): where the experts' state records live. Checked at load so
// a run that would write its states to a missing or read-only folder, or whose host cache cannot
// hold one expert, stops before any rank starts (exit 2).
#include <unistd.h>

#include <filesystem>

#include "config_checker.h"

namespace moebench::config_detail {

void Checker::check_storage() {
  const StorageConfig& s = c_.storage;
  at_least("storage.host_cache_bytes", s.host_cache_bytes, 0, " (0 = unlimited)");
  at_least("storage.device_bytes", s.device_bytes, 0, " (0 = unlimited)");
  non_negative_number("storage.hit_threshold", s.hit_threshold, " (0 = plain LFU)");
  if (ok({"storage.decay"}) && !(s.decay >= 0.0 && s.decay <= 1.0))
    fail("storage.decay", "must be in [0, 1], got " + number_text(s.decay));
  at_least("storage.decay_every", s.decay_every, 0, " (0 = no decay)");
  // The cache must hold at least one expert's record (fp32 weights + Adam m + v), else every
  // get() of the trainer would fail.
  if (ok({"storage.host_cache_bytes", "model.hidden", "model.ffn_mult"}) && s.host_cache_bytes > 0 &&
      c_.model.hidden >= 1 && c_.model.ffn_mult >= 1) {
    const int64_t record = expert_state_record_bytes(c_.model);
    if (s.host_cache_bytes < record)
      fail("storage.host_cache_bytes",
           "must hold at least one expert's state record (3 x " + std::to_string(expert_param_count(c_.model)) +
               " fp32 values = " + std::to_string(record) + " bytes for model.hidden = " +
               std::to_string(c_.model.hidden) + ", ffn_mult = " + std::to_string(c_.model.ffn_mult) + "), got " +
               std::to_string(s.host_cache_bytes) + " (0 = unlimited)");
  }
  check_dense_storage();
  if (!ok({"storage.sparse", "storage.ssd_dir"})) return;
  if (s.sparse != SparseStorage::ssd) return;  // ssd_dir is only read with sparse = "ssd"
  if (s.ssd_dir.empty()) return fail("storage.ssd_dir", "required when storage.sparse = \"ssd\"", "storage.sparse");
  std::error_code ec;
  const auto status = std::filesystem::status(s.ssd_dir, ec);
  if (!std::filesystem::exists(status)) return fail("storage.ssd_dir", "directory not found: " + s.ssd_dir);
  if (!std::filesystem::is_directory(status)) return fail("storage.ssd_dir", "not a directory: " + s.ssd_dir);
  // access(W_OK | X_OK): creating files inside needs both (root passes unless the file system is read-only).
  if (::access(s.ssd_dir.c_str(), W_OK | X_OK) != 0) fail("storage.ssd_dir", "directory is not writable: " + s.ssd_dir);
}

// storage.dense = "zero3" (storage/dense_shards.h): the shards are contiguous pieces of each
// layer's dense parameters over the DP group, so it is refused, naming the key, wherever a
// rank does not hold whole dense layers (tensor or pipeline parallelism, the partitioned
// embedding) or there is no second DP rank to shard over, rather than half-working.
void Checker::check_dense_storage() {
  const StorageConfig& s = c_.storage;
  const char* key = "storage.dense";
  if (!ok({key})) return;
  if (ok({"storage.zero3_experts"}) && s.zero3_experts) {
    if (s.dense != DenseStorage::zero3)
      return fail("storage.zero3_experts", "needs storage.dense = \"zero3\" (the experts are sharded with their block's dense part)",
                  key);
    if (ok({"parallel.ep"}) && c_.parallel.ep != 1)
      return fail("storage.zero3_experts", "needs parallel.ep = 1 (every rank holds every expert, replicated over the "
                                           "data-parallel ranks), got " + std::to_string(c_.parallel.ep),
                  "parallel.ep");
    if (ok({"strategy.name"}) && c_.strategy.name != "expert_centric" && c_.strategy.name != "fastermoe")
      return fail("storage.zero3_experts", "needs strategy.name = \"expert_centric\" or \"fastermoe\" (their expert "
                                           "gradients are complete when the block's backward ends), got \"" +
                                               c_.strategy.name + "\"",
                  "strategy.name");
  }
  if (s.dense != DenseStorage::zero3) return;
  if (ok({"parallel.tp"}) && c_.parallel.tp > 1)
    return fail(key, "\"zero3\" needs parallel.tp = 1 (it shards whole dense layers over the data-parallel ranks), got " +
                         std::to_string(c_.parallel.tp), "parallel.tp");
  if (ok({"parallel.pp"}) && c_.parallel.pp > 1)
    return fail(key, "\"zero3\" needs parallel.pp = 1 (pipeline stages are not supported with sharded dense layers), got " +
                         std::to_string(c_.parallel.pp), "parallel.pp");
  if (ok({"model.embedding_partition"}) && c_.model.embedding_partition)
    return fail(key, "\"zero3\" does not combine with model.embedding_partition (that splits embed.wte over the same "
                     "data-parallel ranks by columns)", "model.embedding_partition");
  if (ok({"storage.sparse"}) && s.sparse == SparseStorage::ssd)
    return fail(key, "\"zero3\" does not combine with storage.sparse = \"ssd\" yet (its optimizer keeps the experts' "
                     "states in memory)", "storage.sparse");
  if (ok({"run.ranks", "parallel.tp", "parallel.pp", "parallel.dp"}) && data_parallel() == 1)
    fail(key, "\"zero3\" needs more than one data-parallel rank to shard over (run.ranks = " +
                  std::to_string(c_.run.ranks) + ")", "run.ranks");
}

}  // namespace moebench::config_detail

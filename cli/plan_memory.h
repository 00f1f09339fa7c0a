#pragma once
// `moebench plan CONFIG --memory [--json] [--cluster FILE]`: MoNTA's memory model
// (perf/memory_model.h) per device: P1 and P2, the weights per ZeRO stage (Table 3), the
// activations per Table 4 row, eq. 1's total of every combination against the device memory
// with a verdict each, and the fp32 trainer's own prediction (perf/trainer_memory.h). Every
// number PREDICTED. The device memory is cluster.device_memory_gib, or where that is 0 this
// host's available memory shared by run.ranks (a local run's ranks share it).
// Beside it, with MoE blocks, MoESys eq. 1 (perf/moesys_storage.h): the GPU, CPU and SSD sides
// for the whole model over run.ranks devices and which tier overflows; `alpha` (--alpha) is the
// sparse parameters' activation likelihood, nullopt = default_alpha(config).
#include <optional>
#include <string>
#include <vector>

namespace moebench::cli {

// `sets`: the config overrides, the cluster file's keys included (cluster_option.h).
int memory_plan_main(const std::string& path, const std::vector<std::string>& sets, bool json,
                     std::optional<double> alpha = std::nullopt);

}  // namespace moebench::cli

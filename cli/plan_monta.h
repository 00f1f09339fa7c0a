#pragma once
// The MoNTA part of `moebench plan CONFIG --cluster FILE` (parallel.tp > 1): per MoE block the
// cost model's predicted AllToAll times per level and Algorithm 3's choice
// (strategies/monta.h monta_block_choices), as a table or JSON.
#include <nlohmann/json.hpp>

#include "moebench/config/config.h"
#include "moebench/perf/cluster_model.h"

namespace moebench::cli {

nlohmann::json monta_plan_json(const Config& cfg, const ClusterModel& cluster);
void print_monta_plan(const Config& cfg, const ClusterModel& cluster);

}  // namespace moebench::cli

// monta's part of `moebench plan CONFIG --cluster FILE` (strategies/monta.h monta_plan_json / monta_plan_text).
#include <algorithm>
#include <cstdio>

#include "moebench/config/config_layout.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/monta.h"

namespace moebench {

namespace {
const char* source(bool measured) { return measured ? "measured (cluster *_busbw_* keys)" : "link fallback (latency model)"; }
}  // namespace

nlohmann::json monta_plan_json(const Config& cfg, const ClusterModel& cluster) {
  nlohmann::json rows = nlohmann::json::array();
  for (const MontaBlockChoice& c : monta_block_choices(cfg, cluster))
    rows.push_back({{"block", c.block},
                    {"I_bytes", c.I},
                    {"baseline_ms", c.baseline * 1e3},
                    {"O1_ms", c.O1 * 1e3},
                    {"O2_ms", c.O2.seconds * 1e3},
                    {"O2_chunks", c.O2.chunks},
                    {"O3_ms", c.O3.seconds * 1e3},
                    {"O3_chunks", c.O3.chunks},
                    {"choice", monta_level_name(c.chosen.level)},
                    {"choice_chunks", c.chosen.chunks},
                    {"bound_eq13", c.bound},
                    {"r1", source(c.measured_r1)},
                    {"r2", source(c.measured_r2)}});
  return rows;
}

std::string monta_plan_text(const Config& cfg, const ClusterModel& cluster) {
  const std::vector<MontaBlockChoice> rows = monta_block_choices(cfg, cluster);
  if (rows.empty()) return "";
  const ParallelLayout layout = layout_of(cfg);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "\nmonta: one AllToAll per level, PREDICTED by MoNTA's cost model (eq. 8-11, Algorithms 1-3) for rank 0's "
              "groups (t = %d, e = %d); r1 %s, r2 %s\n",
              layout.tp(), layout.ep(),
              source(rows.front().measured_r1), source(rows.front().measured_r2));
  out += line;
  std::snprintf(line, sizeof line, "%6s %12s %12s %10s %14s %14s %12s %10s\n", "block", "I MB", "baseline ms", "O1 ms", "O2 ms (N)",
              "O3 ms (N)", "choice", "eq. 13");
  out += line;
  for (const MontaBlockChoice& c : rows) {
    char o2[32], o3[32], choice[32];
    std::snprintf(o2, sizeof o2, "%.3f (%d)", c.O2.seconds * 1e3, c.O2.chunks);
    std::snprintf(o3, sizeof o3, "%.3f (%d)", c.O3.seconds * 1e3, c.O3.chunks);
    std::snprintf(choice, sizeof choice, "%s x %d", monta_level_name(c.chosen.level), c.chosen.chunks);
    std::snprintf(line, sizeof line, "%6d %12.3f %12.3f %10.3f %14s %14s %12s %10.3f\n", c.block, c.I / 1e6, c.baseline * 1e3,
                c.O1 * 1e3, o2, o3, choice, c.bound);
    out += line;
  }
  return out;
}

}  // namespace moebench

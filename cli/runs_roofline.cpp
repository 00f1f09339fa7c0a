#include "runs_roofline.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "run_db.h"
#include "moebench/perf/ddl_prediction.h"
#include "moebench/perf/ddl_roofline.h"

namespace moebench::cli {
namespace {

bool simulated(const RunStore& store, const RunInfo& run) {
  for (const auto& [key, value] : store.tags(run.id))
    if (key == "predicted") return true;
  return false;
}

std::string num(double v) { return fmt_num("%.4g", v); }

}  // namespace

int runs_roofline(const std::string& db, const std::vector<std::string>& refs, double peak_gflops, bool as_json) {
  auto store = open_run_db(db, RunStore::Mode::read_only);
  nlohmann::json out = nlohmann::json::array();
  TextTable table({"run", "kind", "layer", "R_CC", "P-bar GFLOP/s", "semi-ideal", "ideal", "vs semi-ideal", "Lat_comp ms",
                   "Lat_comm ms", "Lat_e2e ms", "note"},
                  {false, false, true, true, true, true, true, false, true, true, true, false});
  for (const std::string& ref : refs) {
    const RunInfo run = store->find_run(ref);
    std::optional<double> peak;
    if (peak_gflops > 0) peak = peak_gflops;
    else peak = ddl_stored_peak_gflops(*store, run);
    const bool sim = simulated(*store, run);
    auto add = [&](const DdlPoint& p, const char* kind) {
      const double semi = peak && p.has_point() ? ddl_semi_ideal_gflops(p.r_cc, *peak) : NAN;
      const double ideal = peak && p.has_point() ? ddl_ideal_gflops(p.r_cc, *peak) : NAN;
      const std::string above =
          std::isfinite(semi) ? (p.achieved_gflops > semi ? "above" : "below") : std::string("-");
      if (as_json) {
        auto n = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
        out.push_back({{"run", run.name}, {"run_id", run.id}, {"kind", kind}, {"layer", p.layer},
                       {"r_cc", n(p.r_cc)}, {"achieved_gflops", n(p.achieved_gflops)}, {"semi_ideal_gflops", n(semi)},
                       {"ideal_gflops", n(ideal)}, {"lat_comp_ms", n(p.lat_comp_s * 1e3)},
                       {"lat_comm_ms", n(p.lat_comm_s * 1e3)}, {"lat_e2e_ms", n(p.lat_e2e_s * 1e3)},
                       {"reason", p.reason}});
        return;
      }
      table.add({run.name, kind, p.layer < 0 ? "all" : std::to_string(p.layer), num(p.r_cc), num(p.achieved_gflops),
                 num(semi), num(ideal), above, num(p.lat_comp_s * 1e3), num(p.lat_comm_s * 1e3),
                 num(p.lat_e2e_s * 1e3), p.reason});
    };
    for (const DdlPoint& p : ddl_roofline_points(*store, run)) add(p, sim ? "simulated" : "measured");
    if (!sim)
      for (const DdlPredictedPoint& p : ddl_predicted_points(*store, run)) add(p, "predicted");
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("# DDL-roofline (FasterMoE §3.3): R_CC = Lat_comp / Lat_comm, P-bar = FLOPs / (N Lat_e2e) per worker; "
              "semi-ideal = P_w R / (R + 1), ideal = P_w min(1, R)%s\n",
              peak_gflops > 0 ? (", P_w = " + num(peak_gflops) + " GFLOP/s (--peak)").c_str()
                              : ", P_w = each run's peak_gflops");
  std::printf("# simulated and predicted points are PREDICTED, never measured\n");
  std::cout << table.str();
  return 0;
}

}  // namespace moebench::cli

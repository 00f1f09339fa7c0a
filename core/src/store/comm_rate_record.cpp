#include "moebench/store/comm_rate_record.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>

namespace moebench {

namespace {
constexpr const char* kBusbwPrefix = "busbw.";

std::string when_text(double start_time) {
  char when[32] = "-";
  const std::time_t t = static_cast<std::time_t>(start_time);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  return when;
}
}  // namespace

RunInfo record_comm_rate(RunStore& store, const std::string& op, int ranks,
                         const std::vector<std::pair<double, double>>& busbw) {
  RunInfo info;
  info.name = "comm." + op;
  info.experiment = kBenchExperiment;
  info.ranks = ranks;
  RunInfo run = store.create_run(info);
  std::vector<std::pair<std::string, std::string>> params = {{"ranks", std::to_string(ranks)}};
  for (const auto& [bytes, gbs] : busbw)
    if (bytes > 0) params.emplace_back(kBusbwPrefix + std::to_string((long long)bytes), std::to_string(gbs));
  store.log_params(run.id, params);
  store.set_tag(run.id, "bench", "comm");
  store.set_tag(run.id, "op", op);
  store.set_status(run.id, RunStatus::finished, 0);
  return store.find_run(std::to_string(run.id));
}

std::optional<CommRate> latest_comm_rate(const RunStore& store, const std::string& host, const std::string& op,
                                         int ranks) {
  std::optional<CommRate> best;
  double newest = -1;
  bool best_matches = false;
  for (const RunInfo& run : store.list_runs(kBenchExperiment)) {
    if (run.host != host || run.status != RunStatus::finished || run.name != "comm." + op) continue;
    CommRate c;
    c.op = op;
    for (const auto& [key, value] : store.params(run.id)) {
      if (key == "ranks") c.ranks = std::atoi(value.c_str());
      if (key.rfind(kBusbwPrefix, 0) == 0)
        c.busbw.push_back({std::atof(key.c_str() + std::char_traits<char>::length(kBusbwPrefix)), std::atof(value.c_str())});
    }
    std::sort(c.busbw.begin(), c.busbw.end());
    c.busbw.erase(std::remove_if(c.busbw.begin(), c.busbw.end(), [](const auto& p) { return !(p.second > 0); }),
                  c.busbw.end());
    if (c.busbw.empty()) continue;
    const bool matches = c.ranks == ranks;
    if (best && (best_matches && !matches)) continue;
    if (best && best_matches == matches && run.start_time <= newest) continue;
    c.source = "bench comm " + op + " " + run.uuid.substr(0, 8) + " at " + when_text(run.start_time) + ", " +
               std::to_string(c.ranks) + " ranks";
    best = c;
    newest = run.start_time;
    best_matches = matches;
  }
  return best;
}

}  // namespace moebench

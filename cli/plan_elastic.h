#pragma once
// `moebench plan CONFIG --elastic [--ranks N] [--json]`: MoESys's elastic task-to-ranks
// assignment (§IV-A, Fig. 6; dist/elastic_plan.h) for the config's data.tasks on its
// data-parallel ranks (run.ranks / (tp x pp); --ranks sets run.ranks): the ranks per task, each
// rank's tasks and load (sequences per step), max / mean imbalance and the predicted bubble
// share, beside the one-rank-per-task layout (Table III's "load imbalanced") and the predicted
// per-rank throughput ratio of the two, then the [data] lines that run the proposal. Every
// number PREDICTED from the loads alone (a rank's step time proportional to its sequences).
// The config's own data.rank_tasks is ignored (the proposal replaces it).
#include <string>
#include <vector>

namespace moebench::cli {

int elastic_plan_main(const std::string& path, std::vector<std::string> sets, bool json);

}  // namespace moebench::cli

#pragma once
// The machine's measured collective rates as records of the run store, so that MoNTA's
// `level = "auto"` chooses on this machine from its own measurements (monta.txt eq. 8-9: the
// efficiencies r1, r2 "can be pre-tested and plotted").
//
// `moebench bench comm --op alltoall|allgather --db FILE` stores its curve as a FINISHED run of
// experiment "bench" named "comm.<op>" (tags bench=comm and op=<op>; params ranks and one
// "busbw.<bytes>" per size, GB/s). A run whose cluster describes no curve for an op takes the
// newest record of that op on its host (rank 0's), preferring one measured with the group's
// rank count (comm_curves_for_run in train/).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench {

struct CommRate {
  std::string op;                                  // "alltoall" or "allgather"
  int ranks = 0;                                   // ranks it was measured with
  std::vector<std::pair<double, double>> busbw;    // (bytes, GB/s), ascending bytes
  std::string source;                              // "bench comm alltoall 1a2b3c4d at <time>, 4 ranks"
};

// Records a `bench comm` curve; points with a zero size are left out. Returns the run.
RunInfo record_comm_rate(RunStore& store, const std::string& op, int ranks,
                         const std::vector<std::pair<double, double>>& busbw);
// The newest FINISHED curve of `op` on `host` measured with `ranks` ranks, else the newest with
// any rank count; nullopt when there is none.
std::optional<CommRate> latest_comm_rate(const RunStore& store, const std::string& host, const std::string& op,
                                         int ranks);

}  // namespace moebench

#pragma once
// MoNTA's `level` / `chunks = "auto"` on this machine: where the run's cluster describes no
// measured AllToAll / AllGather curve (cluster keys *_busbw_*), rank 0 takes this host's newest
// `bench comm --db` record of the op from the run's database (store/comm_rate_record.h; the
// one measured with the EP / TP group's rank count first) and every rank uses it; otherwise the
// cost model falls back to the links' latency curve. What was used is printed once, by rank 0.
// Emulated runs keep their cluster file's curves: this host's do not describe it.
#include "moebench/config/config.h"
#include "moebench/dist/communicator.h"

namespace moebench::cli {

// Collective over world.
void use_measured_comm_curves(Config& cfg, Communicator& world);

}  // namespace moebench::cli

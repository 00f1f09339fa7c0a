#pragma once
// chrome_trace: a stored run's spans as a Chrome trace (JSON object format) that Perfetto
// (https://ui.perfetto.dev) and chrome://tracing load.
//
//   {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {run, uuid, strategy, ...}}
//
// - one process per rank: pid = rank, "M" event process_name {"name": "rank N"} (and
//   process_sort_index = rank);
// - one thread per stream, the same tid for a stream on every rank: "host" 1, "compute" 2,
//   "compute.comm" 3, "comm" 4, other streams from 5 in name order; "M" thread_name events
//   {"name": stream} (and thread_sort_index = tid);
// - one "X" event per span: ts and dur in microseconds, name, cat = the span's category,
//   args {"step", and "bytes" when > 0, "peer", "layer", "expert" when >= 0};
// - flows: for every span with a peer, the span of the same step and name (and layer) on the
//   peer rank is its match, the receive side (the k-th such span on each rank are paired in
//   start order, so ring collectives, where r sends to r+1, pair too); a "s" event on the span and a "f" event ("bp": "e") on the match share a
//   unique id, cat and name, so Perfetto draws an arrow from sender to receiver. Both ends sit
//   at the middle of their span, so each binds to that span and to no neighbour. Spans with no
//   match in the range get no flow.
// - counters: per rank and step a "C" event "bytes sent" with args {"intra_node",
//   "inter_node"} (bytes that rank sent in that step) at the start of the rank's "step" span.
//
// Clocks: each rank's spans are stored relative to that rank's own executor epoch, so the
// ranks' clocks are not comparable as stored. Each rank r is shifted by
//   offset_r = start(rank 0's first "step" span in the range) - start(rank r's first one)
// so that all ranks' first exported steps start together (the ranks start a step together
// after the previous step's collectives, so this is the best common origin the data gives);
// a rank without a "step" span in the range is not shifted. Then the whole trace is shifted
// so that the earliest event is at ts = 0. Timestamps are rounded to nanoseconds.
#include <nlohmann/json.hpp>

#include <cstdint>

#include "moebench/store/run_store.h"

namespace moebench {

// Steps [first_step, last_step] inclusive; last_step = -1 means to the end of the run.
nlohmann::json chrome_trace(const RunStore& store, const RunInfo& run, int64_t first_step = 0,
                            int64_t last_step = -1);

}  // namespace moebench

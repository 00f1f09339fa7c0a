#pragma once
// The start-up note of a run asking for FasterMoE's topology-aware gate (moe/topo_gate.h,
// §4.3) where it cannot change anything. The gate itself is fastermoe's
// (strategies/fastermoe_gate.h).
#include <string>

#include "moebench/config/config.h"

namespace moebench {


// The start-up note `moebench run` prints once on rank 0 when the gate is asked for but
// cannot change anything (one node; or every EP group inside one node), else "".
std::string topo_gate_note(const Config& cfg);

}  // namespace moebench

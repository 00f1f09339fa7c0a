#pragma once
// MoNTA's network-traffic-aware cost model (monta.txt, "Network-traffic-aware", eq. 3-11,
// Algorithms 1-3): the time of one AllToAll of I bytes under tensor parallelism t and expert
// parallelism e, at each optimisation level, and the level and chunk count it chooses. Pure:
// bandwidths and efficiency curves in, seconds out ("predicted", never measured).
//   AA_j  = I/(N t) (e-1)/e / (B1 r1(I/(N t)))     eq. 8   inter-node AllToAll of chunk j
//   AG_j  = I/N (t-1)/t / (B2 r2(I/N))              eq. 9   intra-node AllGather of chunk j
//   D2D_j = I/N / (B3 r3(I/N))                      eq. 10  the copy restoring the order
//   T_O1  = I/t (e-1)/e / (B1 r1(I/t)) + I (t-1)/t / (B2 r2(I))   eq. 11
//   T_O2  = AA_j + (AG_j + D2D_j) N  if AA_j < AG_j + D2D_j, else AA_j N + AG_j + D2D_j  (Alg. 1)
//   T_O3  = AA_j + AG_j N + D2D_j    if AA_j < AG_j,         else AA_j N + AG_j + D2D_j  (Alg. 2)
// Algorithms 1 and 2 try N = 1, 2, ... until a chunk's AllToAll (I/(N t)) or AllGather (I/N)
// volume falls below I_minimal, keeping the fastest N. (The paper's listing writes `T = T_min`
// in line 19 where `T_min = T` is meant, and returns the last N instead of the best: here the
// best N and its T are kept.) Algorithm 3 takes the fastest of O1, O2, O3 (baseline is not a
// candidate: with t > 1 dropping never moves more bytes).
// The baseline (expert_centric's AllToAll, every TP rank sending all of I):
//   T_base = I (e-1)/e / (B1 r1(I)).
// eq. 12-16 (the Discussion's ratios) divide by T_base taken at the same r1 as the optimised
// AllToAll: the "upper limit" of the speedup; monta_speedup_bound gives eq. 13's limit.
#include <functional>
#include <string>
#include <vector>

namespace moebench {

enum class MontaLevel { baseline, O1, O2, O3 };
const char* monta_level_name(MontaLevel level);  // "baseline", "O1", ...
MontaLevel monta_level_from_name(const std::string& name);  // std::invalid_argument for others

// Efficiency r(bytes) of one operation moving `bytes`, in (0, 1].
using Efficiency = std::function<double(double bytes)>;
// Measured points (bytes ascending, efficiency in (0, 1]), interpolated linearly in
// log10(bytes), clamped to the end points. std::invalid_argument for an empty, unsorted or
// out-of-range list.
Efficiency efficiency_curve(std::vector<std::pair<double, double>> points);
// A link's own curve when nothing was measured: an operation of `messages` sequential messages
// of latency `latency` each, moving `bytes` * share at `bandwidth`:
//   r = (bytes share / bandwidth) / (messages latency + bytes share / bandwidth).
Efficiency link_efficiency(double bandwidth, double latency, double messages, double share);

struct MontaInputs {
  double I = 0;                 // bytes of one AllToAll on one rank (eq. 3: b s h BPE)
  int t = 1, e = 1;             // tensor- and expert-parallel degrees
  double B1 = 0, B2 = 0, B3 = 0;  // bytes/s: AllToAll link, AllGather link, copy (device memory)
  Efficiency r1, r2, r3;        // efficiencies by the bytes of one AllToAll / AllGather / copy
  double I_minimal = 0;         // smallest chunk volume worth sending (Algorithms 1-2, line 6)
  int max_chunks = 1 << 16;     // N bound beside I_minimal (a chunk needs rows)
};

struct MontaChunkTimes {
  double aa = 0, ag = 0, d2d = 0;  // seconds of one chunk (eq. 8-10)
};
MontaChunkTimes monta_chunk_times(const MontaInputs& in, int N);

// Seconds of one AllToAll at a level (O1 ignores N; baseline ignores N). std::invalid_argument
// for N < 1 or bandwidths <= 0.
double monta_seconds(const MontaInputs& in, MontaLevel level, int N = 1);

struct MontaChoice {
  MontaLevel level = MontaLevel::O1;
  int chunks = 1;
  double seconds = 0;
};
// Algorithm 1 (O2) / Algorithm 2 (O3): the fastest N >= 1 (N = 1 always tried).
MontaChoice monta_best_chunks(const MontaInputs& in, MontaLevel level);
// Algorithm 3: the fastest of O1 and the best O2 and O3 (ties: the lower level).
MontaChoice monta_select(const MontaInputs& in);
// Algorithm 3 with the chunks fixed: the fastest of O1 and O2 / O3 with N chunks.
MontaChoice monta_select(const MontaInputs& in, int N);
// eq. 13: T_O3 / T_base as N grows without bound (the AllGather's share, AA_j < AG_j), or the
// AllToAll's when it is the longer: max((t-1) B1 r1 e / (t (e-1) B2 r2) , 1/t).
double monta_speedup_bound(const MontaInputs& in);

}  // namespace moebench

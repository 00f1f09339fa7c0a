// chrome_trace: stored spans -> Chrome trace event JSON (format and clock alignment in
// chrome_trace.h).
#include "moebench/store/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace moebench {

namespace {

using json = nlohmann::json;

// The task-graph runtime's roles, with compute.comm and comm of runs recorded before it.
const char* const kKnownStreams[] = {"host", "compute", "compute.comm", "comm", "comm.intra", "comm.inter", "copy", "io"};
constexpr int kKnown = (int)(sizeof kKnownStreams / sizeof kKnownStreams[0]);

bool is_step_span(const SpanRow& s) { return s.stream == "host" && s.name == "step"; }

// Microseconds, rounded to nanoseconds so equal times print equal.
double to_us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

std::string steps_text(int64_t first, int64_t last) {
  return std::to_string(first) + ".." + (last < 0 ? std::string("end") : std::to_string(last));
}

}  // namespace

json chrome_trace(const RunStore& store, const RunInfo& run, int64_t first_step, int64_t last_step) {
  std::vector<SpanRow> spans = store.spans(run.id, first_step, last_step);
  const std::vector<TrafficRow> traffic = store.traffic(run.id, first_step, last_step);

  // Streams -> tids: the known streams first, then the others in name order.
  std::map<std::string, int> tid;
  for (int i = 0; i < kKnown; ++i) tid[kKnownStreams[i]] = i + 1;
  std::set<std::string> extra;
  for (const auto& s : spans)
    if (!tid.count(s.stream)) extra.insert(s.stream);
  int next_tid = kKnown + 1;
  for (const auto& name : extra) tid[name] = next_tid++;

  // Clock alignment: each rank's first "step" span in the range starts where the reference
  // rank's (rank 0, else the lowest rank that has one) does.
  std::map<int, std::pair<int64_t, double>> first_step_span;  // rank -> (step, start)
  for (const auto& s : spans) {
    if (!is_step_span(s)) continue;
    auto it = first_step_span.find(s.rank);
    if (it == first_step_span.end() || std::make_pair(s.step, s.start) < it->second)
      first_step_span[s.rank] = {s.step, s.start};
  }
  std::map<int, double> offset;
  if (!first_step_span.empty()) {
    const double ref = first_step_span.begin()->second.second;
    for (const auto& [rank, first] : first_step_span) offset[rank] = ref - first.second;
  }
  auto aligned = [&](int rank, double t) {
    auto it = offset.find(rank);
    return t + (it == offset.end() ? 0.0 : it->second);
  };
  double origin = 0;
  bool have_origin = false;
  for (const auto& s : spans) {
    const double a = aligned(s.rank, s.start);
    if (!have_origin || a < origin) origin = a;
    have_origin = true;
  }
  auto ts = [&](int rank, double t) { return to_us(aligned(rank, t) - origin); };

  json events = json::array();

  // Metadata: a process per rank, a thread per stream used on that rank.
  std::set<int> ranks;
  std::map<int, std::set<std::string>> streams_of_rank;
  for (const auto& s : spans) {
    ranks.insert(s.rank);
    streams_of_rank[s.rank].insert(s.stream);
  }
  for (const auto& t : traffic) ranks.insert(t.rank);
  for (int rank : ranks) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"tid", 0},
                      {"args", {{"sort_index", rank}}}});
    for (const auto& stream : streams_of_rank[rank]) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", tid[stream]},
                        {"args", {{"name", stream}}}});
      events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", rank}, {"tid", tid[stream]},
                        {"args", {{"sort_index", tid[stream]}}}});
    }
  }

  // Complete events, by rank, thread and time.
  std::stable_sort(spans.begin(), spans.end(), [&](const SpanRow& a, const SpanRow& b) {
    return std::make_tuple(a.rank, tid[a.stream], a.start) < std::make_tuple(b.rank, tid[b.stream], b.start);
  });
  for (const auto& s : spans) {
    json args = {{"step", s.step}};
    if (s.bytes > 0) args["bytes"] = s.bytes;
    if (s.peer >= 0) args["peer"] = s.peer;
    if (s.layer >= 0) args["layer"] = s.layer;
    if (s.expert >= 0) args["expert"] = s.expert;
    if (s.flops > 0) args["flops"] = s.flops;
    if (s.chunk >= 0) args["chunk"] = s.chunk;
    events.push_back({{"ph", "X"}, {"name", s.name}, {"cat", s.category}, {"pid", s.rank},
                      {"tid", tid[s.stream]}, {"ts", ts(s.rank, s.start)}, {"dur", to_us(s.duration)},
                      {"args", args}});
  }

  // Flows: a span on rank r that sends to peer p is linked to the span of the same step, name
  // and layer on rank p that holds the receive: the k-th such span on r (in start order) to
  // the k-th on p. Ring collectives (r sends to r+1, which sends to r+2) pair up this way too.
  using OpKey = std::tuple<int64_t, std::string, int, int>;  // step, name, layer, rank
  std::map<OpKey, std::vector<const SpanRow*>> by_op;
  for (const auto& s : spans) by_op[{s.step, s.name, s.layer, s.rank}].push_back(&s);
  for (auto& [key, list] : by_op)
    std::stable_sort(list.begin(), list.end(), [](const SpanRow* a, const SpanRow* b) { return a->start < b->start; });
  int64_t flow_id = 0;
  for (const auto& [key, list] : by_op) {
    const auto& [step, name, layer, rank] = key;
    for (size_t k = 0; k < list.size(); ++k) {
      const SpanRow& a = *list[k];
      if (a.peer < 0 || a.peer == a.rank) continue;
      auto match = by_op.find({step, name, layer, a.peer});
      if (match == by_op.end() || k >= match->second.size()) continue;
      const SpanRow& b = *match->second[k];
      ++flow_id;
      events.push_back({{"ph", "s"}, {"id", flow_id}, {"name", a.name}, {"cat", a.category}, {"pid", a.rank},
                        {"tid", tid[a.stream]}, {"ts", ts(a.rank, a.start + a.duration / 2)}});
      events.push_back({{"ph", "f"}, {"bp", "e"}, {"id", flow_id}, {"name", a.name}, {"cat", a.category},
                        {"pid", b.rank}, {"tid", tid[b.stream]}, {"ts", ts(b.rank, b.start + b.duration / 2)}});
    }
  }

  // Counters: bytes each rank sent per step, at the start of its step span (else its first
  // span of that step).
  std::map<std::pair<int, int64_t>, double> step_start;
  for (const auto& s : spans) {
    auto [it, added] = step_start.try_emplace(std::make_pair(s.rank, s.step), s.start);
    if (!added && s.start < it->second) it->second = s.start;
  }
  for (const auto& s : spans)  // the step span wins where there is one
    if (is_step_span(s)) step_start[{s.rank, s.step}] = s.start;
  std::map<std::pair<int, int64_t>, std::pair<int64_t, int64_t>> sent;  // (rank, step) -> (intra, inter)
  for (const auto& t : traffic) {
    auto& v = sent[{t.rank, t.step}];
    (t.link == "inter_node" ? v.second : v.first) += t.bytes;
  }
  for (const auto& [key, bytes] : sent) {
    auto it = step_start.find(key);
    if (it == step_start.end()) continue;
    events.push_back({{"ph", "C"}, {"name", "bytes sent"}, {"pid", key.first}, {"tid", 0},
                      {"ts", ts(key.first, it->second)},
                      {"args", {{"intra_node", bytes.first}, {"inter_node", bytes.second}}}});
  }

  json other = {{"run", run.name},
                {"uuid", run.uuid},
                {"strategy", run.strategy},
                {"topology", run.topology},
                {"steps", steps_text(first_step, last_step)},
                {"clock_alignment",
                 "each rank's first step span in the range is aligned with rank 0's; ranks' clocks are "
                 "otherwise independent"}};
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

}  // namespace moebench

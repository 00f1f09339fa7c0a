#include "moebench/runtime/graph_dump.h"

#include <cstdio>

namespace moebench {
namespace {

std::string label(const GraphTask& t) {
  std::string s;
  if (t.layer >= 0) s += "L" + std::to_string(t.layer);
  if (t.expert >= 0) s += (s.empty() ? "" : " ") + std::string("e") + std::to_string(t.expert);
  if (t.chunk >= 0) s += (s.empty() ? "" : " ") + std::string("c") + std::to_string(t.chunk);
  return s.empty() ? "-" : s;
}

}  // namespace

std::string graph_table(const TaskGraph& g) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%5s  %-10s  %-7s  %-28s  %-12s  %12s  %12s  %s\n", "id", "role", "category",
                "name", "where", "flops", "bytes", "deps / sends");
  out += line;
  for (size_t i = 0; i < g.size(); ++i) {
    const GraphTask& t = g.task((int)i);
    std::string deps;
    for (int d : t.deps) deps += (deps.empty() ? "" : ",") + std::to_string(d);
    std::string sends;
    for (const auto& [peer, bytes] : t.cost.bytes_to_peer)
      sends += (sends.empty() ? "" : " ") + std::to_string(peer) + ":" + std::to_string(bytes);
    if (t.cost.copy_bytes) sends += (sends.empty() ? "" : " ") + std::string(t.cost.device_copy ? "device-copy:" : "copy:") +
                                std::to_string(t.cost.copy_bytes);
    const std::string role = std::string(stream_role_name(t.role)) + (t.priority ? "!" : "");  // ! = priority lane
    std::snprintf(line, sizeof line, "%5zu  %-10s  %-7s  %-28s  %-12s  %12.4g  %12llu  [%s]%s%s\n", i,
                  role.c_str(), task_category_name(t.category), t.name.empty() ? "<unnamed>" : t.name.c_str(), label(t).c_str(),
                  t.cost.flops, (unsigned long long)t.cost.bytes_sent(), deps.c_str(), sends.empty() ? "" : " -> ",
                  sends.c_str());
    out += line;
  }
  return out;
}

nlohmann::json graph_json(const TaskGraph& g) {
  nlohmann::json tasks = nlohmann::json::array();
  for (size_t i = 0; i < g.size(); ++i) {
    const GraphTask& t = g.task((int)i);
    nlohmann::json sends = nlohmann::json::array();
    for (const auto& [peer, bytes] : t.cost.bytes_to_peer) sends.push_back({{"peer", peer}, {"bytes", bytes}});
    tasks.push_back({{"id", i},
                     {"name", t.name},
                     {"role", stream_role_name(t.role)},
                     {"priority", t.priority},
                     {"category", task_category_name(t.category)},
                     {"deps", t.deps},
                     {"flops", t.cost.flops},
                     {"bytes_to_peer", sends},
                     {"copy_bytes", t.cost.copy_bytes},
                     {"device_copy", t.cost.device_copy},
                     {"layer", t.layer},
                     {"expert", t.expert},
                     {"chunk", t.chunk},
                     {"peer", t.peer}});
  }
  return {{"tasks", tasks}};
}

}  // namespace moebench

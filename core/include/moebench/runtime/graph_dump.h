#pragma once
// Printing a TaskGraph (`moebench plan --graph`): a table, one task per line in insertion
// order (id, role (with "!" on its priority lane), category, name, layer/expert/chunk, flops,
// bytes sent per peer, copy bytes, dependencies), or JSON ({"tasks": [...]}, the same fields,
// for tools).
#include <string>

#include <nlohmann/json.hpp>

#include "moebench/runtime/task_graph.h"

namespace moebench {

std::string graph_table(const TaskGraph& g);
nlohmann::json graph_json(const TaskGraph& g);

}  // namespace moebench

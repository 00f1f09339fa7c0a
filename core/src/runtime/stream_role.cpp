#include "moebench/runtime/stream_role.h"

namespace moebench {

const char* stream_role_name(StreamRole r) {
  switch (r) {
    case StreamRole::host: return "host";
    case StreamRole::compute: return "compute";
    case StreamRole::comm_intra: return "comm.intra";
    case StreamRole::comm_inter: return "comm.inter";
    case StreamRole::copy: return "copy";
    case StreamRole::io: return "io";
  }
  return "unknown";
}

const char* task_category_name(TaskCategory c) {
  switch (c) {
    case TaskCategory::compute: return "compute";
    case TaskCategory::comm: return "comm";
    case TaskCategory::copy: return "copy";
    case TaskCategory::io: return "io";
  }
  return "unknown";
}

std::optional<StreamRole> parse_stream_role(std::string_view name) {
  for (int i = 0; i < kStreamRoles; ++i)
    if (name == stream_role_name((StreamRole)i)) return (StreamRole)i;
  return std::nullopt;
}

std::optional<TaskCategory> parse_task_category(std::string_view name) {
  for (TaskCategory c : {TaskCategory::compute, TaskCategory::comm, TaskCategory::copy, TaskCategory::io})
    if (name == task_category_name(c)) return c;
  return std::nullopt;
}

}  // namespace moebench

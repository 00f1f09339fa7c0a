#include "moebench/runtime/task.h"

namespace moebench {

const char* task_category_name(TaskCategory c) {
  switch (c) {
    case TaskCategory::compute: return "compute";
    case TaskCategory::comm: return "comm";
    case TaskCategory::copy: return "copy";
    case TaskCategory::io: return "io";
  }
  return "unknown";
}

}  // namespace moebench

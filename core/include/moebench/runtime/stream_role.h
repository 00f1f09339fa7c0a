#pragma once
// Stream roles and task categories: where a task runs and what kind of work it is.
//   role      the executor worker (a CPU thread with its own communicators; on the GPU a
//             cudaStream) a task is queued on: host (the rank's main thread, and the blocking
//             collectives of its chain, which the executor runs on the compute worker), compute (owns the
//             BLAS/OpenMP threads), comm.intra / comm.inter (collectives and one-sided
//             operations inside / across nodes), copy (memory copies), io.
//   category  what the work is: compute, comm, copy, io. A comm task is normally on a comm
//             role; summaries, the roofline and traces read these two typed fields.
#include <optional>
#include <string_view>

namespace moebench {

enum class StreamRole { host, compute, comm_intra, comm_inter, copy, io };
inline constexpr int kStreamRoles = 6;

enum class TaskCategory { compute, comm, copy, io };

const char* stream_role_name(StreamRole r);     // "host", "compute", "comm.intra", ...
const char* task_category_name(TaskCategory c); // "compute", "comm", "copy", "io"
std::optional<StreamRole> parse_stream_role(std::string_view name);
std::optional<TaskCategory> parse_task_category(std::string_view name);

}  // namespace moebench

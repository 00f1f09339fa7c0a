#pragma once
// Internals shared by the communicator backends (core/src/dist only): element-wise
// reductions and the user tag range.
#include <cstddef>

#include "moebench/dist/communicator.h"

namespace moebench::detail {

// out[i] = a[i] op b[i] for i < count; out may alias a or b. The operand order is fixed
// (a first), so a reduction chain evaluated in the same order gives the same bits everywhere.
void reduce_elements(void* out, const void* a, const void* b, size_t count, DType type, ReduceOp op);

const char* reduce_op_name(ReduceOp op);

// Point-to-point tags users may pass: [0, kMaxUserTag). Tags above are reserved for the
// messages of the MPI backend's own collectives (same communicator, separate tags).
constexpr int kMaxUserTag = 32700;
// Throws std::invalid_argument naming `what` when tag is outside the user range.
void check_user_tag(const char* what, int tag);

}  // namespace moebench::detail

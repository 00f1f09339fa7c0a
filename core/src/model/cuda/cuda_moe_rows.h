#pragma once
// The GPU's MoeRows and RowOps (moe/moe_rows.h, moe/row_ops.h): kernels/'s MoeBlock phases, row
// copies, permutations and grouped expert GEMMs on the stream `stream()` returns (the running
// task's), arrays from `be` (its out-of-memory message). CUDA build only.
#include <cuda_runtime.h>

#include <functional>
#include <memory>

namespace moebench {

class Backend;
class MoeRows;

std::unique_ptr<MoeRows> make_cuda_moe_rows(Backend& be, std::function<cudaStream_t()> stream);

}  // namespace moebench

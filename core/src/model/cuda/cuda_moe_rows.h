#pragma once
// The GPU's MoeRows and RowOps (moe/moe_rows.h, moe/row_ops.h): kernels/'s MoeBlock phases, row
// copies, permutations and grouped expert GEMMs on the stream `stream()` returns (the running
// task's), arrays from `be` (its out-of-memory message). With `copies` (mixed precision,
// bf16_operands.h) the experts' GEMMs run in bf16 on bf16 copies of the rows and weights, their
// outputs and gradients cast back into the fp32 rows and added into the fp32 gradients.
// CUDA build only.
#include <cuda_runtime.h>

#include <functional>
#include <memory>

namespace moebench {

class Backend;
class MoeRows;
class WeightCopies;

std::unique_ptr<MoeRows> make_cuda_moe_rows(Backend& be, std::function<cudaStream_t()> stream,
                                            const WeightCopies* copies = nullptr);

}  // namespace moebench

#pragma once
// All parameters of a model in one contiguous float buffer with named views; the gradients
// mirror the same layout in a second buffer. Names are the checkpoint tensor names
// (e.g. "blocks.3.moe.experts.5.w1"). Both buffers live in a Backend's memory (tensor/backend.h):
// host memory on the CPU, the GPU's on CUDA, where host code reads them through host_data() /
// host_grads() copies.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "moebench/tensor/device_array.h"

namespace moebench {

// The part of a whole tensor one rank holds (tensor parallelism): its elements are the runs
// (flat offset into the whole tensor, count), in order. No runs: the whole tensor.
struct TensorSlice {
  std::vector<int64_t> full_shape;
  std::vector<std::pair<size_t, size_t>> runs;
  bool whole() const { return runs.empty(); }
};

// Rows [first, first + count) of every one of `parts` equal row blocks of a [rows, cols]
// matrix (or vector when cols == 1): the tensor-parallel slice of a fused QKV weight (parts =
// 3) or of a column-parallel weight (parts = 1).
TensorSlice row_slice(int64_t rows, int64_t cols, int parts, int64_t first, int64_t count, bool vector = false);
// Columns [first, first + count) of a [rows, cols] matrix: a row-parallel weight's slice.
TensorSlice column_slice(int64_t rows, int64_t cols, int64_t first, int64_t count);

struct ParamView {
  std::string name;
  std::vector<int64_t> shape;  // what this rank holds
  size_t offset = 0;  // in floats, into ParamArena::data()
  size_t numel = 0;
  bool decay = true;  // AdamW weight decay applies (matrices: yes; biases and norms: no)
  TensorSlice slice;  // where it sits in the whole tensor (checkpoints hold whole tensors)
  const std::vector<int64_t>& full_shape() const { return slice.whole() ? shape : slice.full_shape; }
};

class ParamArena {
 public:
  // Registers a tensor before finalize(); returns its index. Names must be unique.
  size_t add(const std::string& name, std::vector<int64_t> shape, bool decay, TensorSlice slice = {});
  // Allocates the parameter and gradient buffers (zeroed) in `backend`'s memory.
  void finalize(Backend& backend);

  float* param(size_t idx) { return data_.data() + views_[idx].offset; }
  const float* param(size_t idx) const { return data_.data() + views_[idx].offset; }
  float* grad(size_t idx) { return grads_.data() + views_[idx].offset; }
  const float* grad(size_t idx) const { return grads_.data() + views_[idx].offset; }

  const std::vector<ParamView>& views() const { return views_; }
  const ParamView* find(const std::string& name) const;  // nullptr when absent
  // The size() parameters and gradients, in the backend's memory.
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float* grads() { return grads_.data(); }
  const float* grads() const { return grads_.data(); }
  // Copies of them on the host (what tests and checkpoints compare).
  std::vector<float> host_data() const { return data_.download(total_); }
  std::vector<float> host_grads() const { return grads_.download(total_); }
  size_t size() const { return total_; }
  Backend& backend() const { return data_.backend(); }
  void zero_grad();

 private:
  std::vector<ParamView> views_;
  DeviceArray<float> data_, grads_;
  size_t total_ = 0;
  bool finalized_ = false;
};

}  // namespace moebench

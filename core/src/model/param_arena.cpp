#include "moebench/model/param_arena.h"

#include <algorithm>
#include <stdexcept>

namespace moebench {

TensorSlice row_slice(int64_t rows, int64_t cols, int parts, int64_t first, int64_t count, bool vector) {
  TensorSlice s;
  s.full_shape = vector ? std::vector<int64_t>{rows * parts} : std::vector<int64_t>{rows * parts, cols};
  for (int p = 0; p < parts; ++p) s.runs.push_back({(size_t)((p * rows + first) * cols), (size_t)(count * cols)});
  return s;
}

TensorSlice column_slice(int64_t rows, int64_t cols, int64_t first, int64_t count) {
  TensorSlice s;
  s.full_shape = {rows, cols};
  for (int64_t r = 0; r < rows; ++r) s.runs.push_back({(size_t)(r * cols + first), (size_t)count});
  return s;
}

size_t ParamArena::add(const std::string& name, std::vector<int64_t> shape, bool decay, TensorSlice slice) {
  if (finalized_) throw std::logic_error("ParamArena::add after finalize: " + name);
  if (find(name)) throw std::logic_error("duplicate parameter name: " + name);
  ParamView v;
  v.name = name;
  v.numel = 1;
  for (int64_t d : shape) v.numel *= (size_t)d;
  v.shape = std::move(shape);
  v.offset = total_;
  v.decay = decay;
  size_t held = 0;
  for (const auto& run : slice.runs) held += run.second;
  if (!slice.whole() && held != v.numel)
    throw std::logic_error("parameter " + name + ": its slice holds " + std::to_string(held) + " of " +
                           std::to_string(v.numel) + " elements");
  v.slice = std::move(slice);
  total_ += v.numel;
  views_.push_back(std::move(v));
  return views_.size() - 1;
}

void ParamArena::finalize(Backend& backend) {
  data_ = DeviceArray<float>(backend, "the parameters");
  grads_ = DeviceArray<float>(backend, "the gradients");
  data_.ensure(total_);  // zeroed
  grads_.ensure(total_);
  backend.keep_weight_copies(data_.data(), total_);  // mixed precision: their bf16 copies
  finalized_ = true;
}

const ParamView* ParamArena::find(const std::string& name) const {
  auto it = std::find_if(views_.begin(), views_.end(),
                         [&](const ParamView& v) { return v.name == name; });
  return it == views_.end() ? nullptr : &*it;
}

void ParamArena::zero_grad() { grads_.zero(total_); }

}  // namespace moebench

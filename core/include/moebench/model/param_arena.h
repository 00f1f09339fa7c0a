#pragma once
// All parameters of a model in one contiguous float buffer with named views; the gradients
// mirror the same layout in a second buffer. Names are the checkpoint tensor names
// (e.g. "blocks.3.moe.experts.5.w1").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moebench {

struct ParamView {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0;  // in floats, into ParamArena::data()
  size_t numel = 0;
  bool decay = true;  // AdamW weight decay applies (matrices: yes; biases and norms: no)
};

class ParamArena {
 public:
  // Registers a tensor before finalize(); returns its index. Names must be unique.
  size_t add(const std::string& name, std::vector<int64_t> shape, bool decay);
  // Allocates the parameter and gradient buffers (zeroed).
  void finalize();

  float* param(size_t idx) { return data_.data() + views_[idx].offset; }
  const float* param(size_t idx) const { return data_.data() + views_[idx].offset; }
  float* grad(size_t idx) { return grads_.data() + views_[idx].offset; }
  const float* grad(size_t idx) const { return grads_.data() + views_[idx].offset; }

  const std::vector<ParamView>& views() const { return views_; }
  const ParamView* find(const std::string& name) const;  // nullptr when absent
  std::vector<float>& data() { return data_; }
  const std::vector<float>& data() const { return data_; }
  std::vector<float>& grads() { return grads_; }
  const std::vector<float>& grads() const { return grads_; }
  size_t size() const { return total_; }
  void zero_grad();

 private:
  std::vector<ParamView> views_;
  std::vector<float> data_, grads_;
  size_t total_ = 0;
  bool finalized_ = false;
};

}  // namespace moebench

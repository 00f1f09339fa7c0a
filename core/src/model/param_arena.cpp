#include "moebench/model/param_arena.h"

#include <algorithm>
#include <stdexcept>

namespace moebench {

size_t ParamArena::add(const std::string& name, std::vector<int64_t> shape, bool decay) {
  if (finalized_) throw std::logic_error("ParamArena::add after finalize: " + name);
  if (find(name)) throw std::logic_error("duplicate parameter name: " + name);
  ParamView v;
  v.name = name;
  v.numel = 1;
  for (int64_t d : shape) v.numel *= (size_t)d;
  v.shape = std::move(shape);
  v.offset = total_;
  v.decay = decay;
  total_ += v.numel;
  views_.push_back(std::move(v));
  return views_.size() - 1;
}

void ParamArena::finalize() {
  data_.assign(total_, 0.0f);
  grads_.assign(total_, 0.0f);
  finalized_ = true;
}

const ParamView* ParamArena::find(const std::string& name) const {
  auto it = std::find_if(views_.begin(), views_.end(),
                         [&](const ParamView& v) { return v.name == name; });
  return it == views_.end() ? nullptr : &*it;
}

void ParamArena::zero_grad() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

}  // namespace moebench

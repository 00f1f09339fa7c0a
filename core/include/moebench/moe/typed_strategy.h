#pragma once
// StrategyOf<Handle>: the base of a strategy whose per-pass state is its own Handle type.
// MoeLayer and the step graph keep a pass's handle as a MoeHandle (moe/moe_strategy.h) and give
// it back to the strategy that made it; StrategyOf implements MoeStrategy's handle-taking
// virtuals over Handle, so a strategy's layout_pass returns its Handle and its build_pass and
// pass_decisions receive it typed (DeepEP's layout -> handle -> dispatch,
// with the handle's type known to its strategy only).
// The one downcast of a handle is exact_cast: a handle of another type (another strategy's) is
// the caller's bug and throws std::logic_error instead of being misread.
#include <memory>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "moebench/moe/moe_strategy.h"

namespace moebench {

// `base` as T, which must be its exact dynamic type (typeid, the tag every polymorphic object
// carries; a subclass of T is refused too); else std::logic_error naming both types and `who`.
template <class T, class Base>
T& exact_cast(Base& base, const std::string& who) {
  if (typeid(base) != typeid(T))
    throw std::logic_error(who + ": got state of type " + typeid(base).name() + " where its own " + typeid(T).name() +
                           " belongs (a handle of another strategy)");
  return static_cast<T&>(base);
}

template <class Handle, class Base = MoeStrategy>
class StrategyOf : public Base {
 public:
  using Base::Base;
  std::unique_ptr<MoeHandle> layout(const ExchangeCounts& counts, MoeContext& ctx) final {
    return layout_pass(counts, ctx);
  }
  std::vector<TaskId> build(TaskGraph& g, MoeHandle& handle, MoePass pass, const std::vector<TaskId>& after,
                            const MoeBuffers* buffers, MoeContext& ctx) final {
    return build_pass(g, own(handle), pass, after, buffers, ctx);
  }
  std::vector<StrategyDecision> decisions(const MoeHandle& handle) const final { return pass_decisions(own(handle)); }

 protected:
  // MoeStrategy::layout, build and decisions on this strategy's handle.
  virtual std::unique_ptr<Handle> layout_pass(const ExchangeCounts& counts, MoeContext& ctx) = 0;
  virtual std::vector<TaskId> build_pass(TaskGraph& g, Handle& handle, MoePass pass, const std::vector<TaskId>& after,
                                         const MoeBuffers* buffers, MoeContext& ctx) = 0;
  virtual std::vector<StrategyDecision> pass_decisions(const Handle& handle) const {
    (void)handle;
    return {};
  }

 private:
  Handle& own(MoeHandle& h) const { return exact_cast<Handle>(h, this->name()); }
  const Handle& own(const MoeHandle& h) const { return exact_cast<const Handle>(h, this->name()); }
};

}  // namespace moebench

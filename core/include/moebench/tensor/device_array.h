#pragma once
// DeviceArray<T>: an owning array in a Backend's memory (tensor/backend.h): host memory on the
// CPU, GPU memory on CUDA. Movable, not copyable. data() is the backend's pointer, which host
// code reads only on a host backend (to_host copies otherwise).
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moebench/tensor/backend.h"

namespace moebench {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  // `what` names the array in an allocation error (e.g. "blocks.3 qkv activations"); `hint`, when
  // given, follows the error (what to change: "lower train.batch_size").
  DeviceArray(Backend& be, std::string what, std::string hint = {})
      : be_(&be), what_(std::move(what)), hint_(std::move(hint)) {}
  ~DeviceArray() { reset(); }
  DeviceArray(DeviceArray&& o) noexcept
      : be_(o.be_), what_(std::move(o.what_)), hint_(std::move(o.hint_)), p_(std::exchange(o.p_, nullptr)),
        n_(std::exchange(o.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      reset();
      be_ = o.be_;
      what_ = std::move(o.what_);
      hint_ = std::move(o.hint_);
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // Makes room for n elements (at least): a larger array keeps the old contents and starts the
  // new ones at 0 (as std::vector::resize); never shrinks.
  void ensure(size_t n) {
    if (n <= n_) return;
    T* p = nullptr;
    try {
      p = static_cast<T*>(backend().allocate(n * sizeof(T), what_.c_str()));
    } catch (const std::runtime_error& e) {
      if (hint_.empty()) throw;
      throw std::runtime_error(std::string(e.what()) + "; " + hint_);
    }
    if (n_) be_->copy(p, p_, n_ * sizeof(T));
    be_->zero(p + n_, (n - n_) * sizeof(T));
    be_->release(p_);
    p_ = p;
    n_ = n;
  }
  T* ensure_data(size_t n) {
    ensure(n);
    return p_;
  }
  // The first n elements set to 0 (room made first).
  void zero(size_t n) {
    ensure(n);
    if (n) be_->zero(p_, n * sizeof(T));
  }
  // The first n elements from host memory (room made first).
  void assign(const T* host, size_t n) {
    ensure(n);
    if (n) be_->to_device(p_, host, n * sizeof(T));
  }
  // The first n elements, copied to the host.
  std::vector<T> download(size_t n) const {
    std::vector<T> host(n);
    if (n) be_->to_host(host.data(), p_, n * sizeof(T));
    return host;
  }
  std::vector<T> download() const { return download(n_); }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  Backend& backend() const {
    if (!be_) throw std::logic_error("DeviceArray without a backend");
    return *be_;
  }

 private:
  void reset() noexcept {
    if (p_) be_->release(p_);
    p_ = nullptr;
    n_ = 0;
  }
  Backend* be_ = nullptr;
  std::string what_ = "array";
  std::string hint_;
  T* p_ = nullptr;
  size_t n_ = 0;
};

// PinnedArray<T>: an owning array of page-locked host memory from a Backend (plain host memory on
// the CPU), the source of copies on a stream (Backend::to_device_async). Grows, never shrinks;
// growing drops the contents.
template <typename T>
class PinnedArray {
 public:
  explicit PinnedArray(Backend& be) : be_(&be) {}
  ~PinnedArray() {
    if (p_) be_->release_pinned(p_);
  }
  PinnedArray(PinnedArray&& o) noexcept
      : be_(o.be_), p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  PinnedArray& operator=(PinnedArray&& o) noexcept {
    if (this != &o) {
      if (p_) be_->release_pinned(p_);
      be_ = o.be_;
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  T* ensure_data(size_t n) {
    if (n > n_) {
      T* p = static_cast<T*>(be_->allocate_pinned(n * sizeof(T)));
      if (p_) be_->release_pinned(p_);
      p_ = p;
      n_ = n;
    }
    return p_;
  }
  T* data() { return p_; }

 private:
  Backend* be_;
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace moebench

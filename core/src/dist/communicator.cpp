// DType helpers, the shared element-wise reductions and Communicator::count_send.
#include "moebench/dist/communicator.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "moebench/dist/served_window.h"
#include "moebench/dist/traffic_meter.h"
#include "comm_detail.h"

namespace moebench {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  throw std::invalid_argument("dtype_size: unknown DType " + std::to_string((int)t));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
  }
  return "unknown";
}

std::unique_ptr<WindowStaging> Communicator::window_staging(Window& inner, void* base) {
  return host_window_staging(inner, base, rank());
}

void Communicator::count_send(int group_peer, size_t bytes) {
  if (!meter_ || bytes == 0) return;
  int peer = world_rank(group_peer);
  if (peer == world_rank(rank())) return;  // self-sends are copies, not traffic
  meter_->add(peer, (uint64_t)bytes);
}

namespace detail {

namespace {

template <class T>
void reduce_typed(T* out, const T* a, const T* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      for (size_t i = 0; i < n; ++i) out[i] = (T)(a[i] + b[i]);
      return;
    case ReduceOp::max:
      for (size_t i = 0; i < n; ++i) out[i] = a[i] < b[i] ? b[i] : a[i];
      return;
    case ReduceOp::min:
      for (size_t i = 0; i < n; ++i) out[i] = b[i] < a[i] ? b[i] : a[i];
      return;
  }
  throw std::invalid_argument("reduce: unknown ReduceOp");
}

}  // namespace

void reduce_elements(void* out, const void* a, const void* b, size_t count, DType type, ReduceOp op) {
  if (count == 0) return;
  switch (type) {
    case DType::f32:
      return reduce_typed((float*)out, (const float*)a, (const float*)b, count, op);
    case DType::f64:
      return reduce_typed((double*)out, (const double*)a, (const double*)b, count, op);
    case DType::i32:
      return reduce_typed((int32_t*)out, (const int32_t*)a, (const int32_t*)b, count, op);
    case DType::i64:
      return reduce_typed((int64_t*)out, (const int64_t*)a, (const int64_t*)b, count, op);
    case DType::u8:
      return reduce_typed((uint8_t*)out, (const uint8_t*)a, (const uint8_t*)b, count, op);
  }
  throw std::invalid_argument("reduce: unknown DType");
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "unknown";
}

void check_user_tag(const char* what, int tag) {
  if (tag < 0 || tag >= kMaxUserTag)
    throw std::invalid_argument(std::string(what) + ": tag " + std::to_string(tag) +
                                " outside the user range [0, " + std::to_string(kMaxUserTag) + ")");
}

}  // namespace detail
}  // namespace moebench

#include "moebench/train/step_records_codec.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace moebench {
namespace {

struct Writer {
  std::vector<uint8_t> buf;
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    buf.insert(buf.end(), p, p + sizeof(T));
  }
  void put_str(const std::string& s) {
    put<uint32_t>((uint32_t)s.size());
    buf.insert(buf.end(), s.begin(), s.end());
  }
};

struct Reader {
  const std::vector<uint8_t>& buf;
  size_t at = 0;
  template <class T>
  T get() {
    if (at + sizeof(T) > buf.size()) throw std::runtime_error("corrupt step records from a rank");
    T v;
    std::memcpy(&v, buf.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string get_str() {
    const uint32_t n = get<uint32_t>();
    if (at + n > buf.size()) throw std::runtime_error("corrupt step records from a rank");
    std::string s(buf.begin() + (long)at, buf.begin() + (long)(at + n));
    at += n;
    return s;
  }
};

}  // namespace

std::vector<uint8_t> encode_rank_records(const std::vector<Span>& spans, const std::vector<uint64_t>& traffic,
                                         const std::vector<std::vector<int>>& routing) {
  Writer w;
  w.put<uint32_t>((uint32_t)spans.size());
  for (const Span& s : spans) {
    w.put<int32_t>(s.rank);
    w.put_str(s.stream);
    w.put_str(s.name);
    w.put<int32_t>((int32_t)s.category);
    w.put<double>(s.start);
    w.put<double>(s.end);
    w.put<uint64_t>(s.bytes);
    w.put<int32_t>(s.peer);
    w.put<int32_t>(s.layer);
    w.put<int32_t>(s.expert);
    w.put<int64_t>(s.step);
  }
  w.put<uint32_t>((uint32_t)traffic.size());
  for (uint64_t t : traffic) w.put<uint64_t>(t);
  for (const auto& counts : routing) {
    w.put<uint32_t>((uint32_t)counts.size());
    for (int c : counts) w.put<int64_t>(c);
  }
  return w.buf;
}

void decode_rank_records(const std::vector<uint8_t>& buf, StepRecords& into) {
  Reader r{buf};
  const uint32_t n = r.get<uint32_t>();
  for (uint32_t i = 0; i < n; ++i) {
    Span s;
    s.rank = r.get<int32_t>();
    s.stream = r.get_str();
    s.name = r.get_str();
    s.category = (TaskCategory)r.get<int32_t>();
    s.start = r.get<double>();
    s.end = r.get<double>();
    s.bytes = r.get<uint64_t>();
    s.peer = r.get<int32_t>();
    s.layer = r.get<int32_t>();
    s.expert = r.get<int32_t>();
    s.step = r.get<int64_t>();
    into.spans.push_back(std::move(s));
  }
  std::vector<uint64_t> peers(r.get<uint32_t>());
  for (auto& t : peers) t = r.get<uint64_t>();
  into.traffic.push_back(std::move(peers));
  std::vector<std::vector<int64_t>> blocks;
  for (size_t b = 0; b < into.moe_blocks.size(); ++b) {
    std::vector<int64_t> counts(r.get<uint32_t>());
    for (auto& c : counts) c = r.get<int64_t>();
    blocks.push_back(std::move(counts));
  }
  into.routing.push_back(std::move(blocks));
}

}  // namespace moebench

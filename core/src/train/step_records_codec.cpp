#include "moebench/train/step_records_codec.h"

#include <climits>
#include <cmath>
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

// Reads the buffer front to back; every length is checked against the bytes left before
// anything is allocated, so a corrupt count cannot ask for gigabytes.
struct Reader {
  std::span<const uint8_t> buf;
  size_t at = 0;

  [[noreturn]] void corrupt(const std::string& what) const {
    throw std::runtime_error("corrupt step records from a rank: " + what + " (at byte " + std::to_string(at) +
                             " of " + std::to_string(buf.size()) + ")");
  }
  size_t left() const { return buf.size() - at; }
  template <class T>
  T get(const char* what) {
    if (left() < sizeof(T)) corrupt(std::string("truncated ") + what);
    T v;
    std::memcpy(&v, buf.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  // A count of items of `item_bytes` each that must fit in the rest of the buffer.
  size_t get_count(const char* what, size_t item_bytes) {
    const uint32_t n = get<uint32_t>(what);
    if ((uint64_t)n * item_bytes > left())
      corrupt(std::string(what) + " " + std::to_string(n) + " needs more than the " + std::to_string(left()) +
              " bytes left");
    return n;
  }
  std::string get_str(const char* what) {
    const size_t n = get_count(what, 1);
    std::string s(reinterpret_cast<const char*>(buf.data()) + at, n);
    at += n;
    return s;
  }
};

// The bytes one encoded span takes besides its name.
constexpr size_t kSpanFixedBytes = 4 + 4 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + 4 + 4 + 4 + 8;

}  // namespace

std::vector<uint8_t> encode_rank_records(const std::vector<Span>& spans, const std::vector<uint64_t>& traffic,
                                         const std::vector<std::vector<int>>& routing,
                                         const std::vector<std::vector<StrategyDecision>>& decisions) {
  Writer w;
  w.put<uint32_t>((uint32_t)spans.size());
  for (const Span& s : spans) {
    w.put<int32_t>(s.rank);
    w.put<int32_t>((int32_t)s.role);
    w.put_str(s.name);
    w.put<int32_t>((int32_t)s.category);
    w.put<double>(s.start);
    w.put<double>(s.end);
    w.put<double>(s.flops);
    w.put<uint64_t>(s.bytes);
    w.put<int32_t>(s.peer);
    w.put<int32_t>(s.layer);
    w.put<int32_t>(s.expert);
    w.put<int32_t>(s.chunk);
    w.put<int64_t>(s.step);
  }
  w.put<uint32_t>((uint32_t)traffic.size());
  for (uint64_t t : traffic) w.put<uint64_t>(t);
  for (const auto& counts : routing) {
    w.put<uint32_t>((uint32_t)counts.size());
    for (int c : counts) w.put<int64_t>(c);
  }
  for (size_t b = 0; b < routing.size(); ++b) {
    const std::vector<StrategyDecision> none;
    const auto& block = b < decisions.size() ? decisions[b] : none;
    w.put<uint32_t>((uint32_t)block.size());
    for (const StrategyDecision& d : block) {
      w.put_str(d.key);
      w.put<double>(d.value);
    }
  }
  return w.buf;
}

void decode_rank_records(std::span<const uint8_t> buf, StepRecords& into) {
  Reader r{buf};
  std::vector<Span> spans(r.get_count("span count", kSpanFixedBytes));
  for (Span& s : spans) {
    s.rank = r.get<int32_t>("span rank");
    const int32_t role = r.get<int32_t>("span role");
    if (role < 0 || role >= kStreamRoles) r.corrupt("span role " + std::to_string(role) + " is not a stream role");
    s.role = (StreamRole)role;
    s.name = r.get_str("span name length");
    const int32_t category = r.get<int32_t>("span category");
    if (category < (int32_t)TaskCategory::compute || category > (int32_t)TaskCategory::io)
      r.corrupt("span category " + std::to_string(category) + " is not a task category");
    s.category = (TaskCategory)category;
    s.start = r.get<double>("span start");
    s.end = r.get<double>("span end");
    s.flops = r.get<double>("span flops");
    s.bytes = r.get<uint64_t>("span bytes");
    s.peer = r.get<int32_t>("span peer");
    s.layer = r.get<int32_t>("span layer");
    s.expert = r.get<int32_t>("span expert");
    s.chunk = r.get<int32_t>("span chunk");
    s.step = r.get<int64_t>("span step");
  }
  std::vector<uint64_t> peers(r.get_count("traffic peer count", 8));
  for (auto& t : peers) t = r.get<uint64_t>("traffic bytes");
  std::vector<std::vector<int64_t>> blocks(into.moe_blocks.size());
  for (auto& counts : blocks) {
    counts.resize(r.get_count("routing expert count", 8));
    for (auto& c : counts) {
      c = r.get<int64_t>("routing count");
      if (c < 0 || c > INT_MAX) r.corrupt("routing count " + std::to_string(c) + " is not a token count");
    }
  }
  std::vector<std::vector<StrategyDecision>> decisions(into.moe_blocks.size());
  for (auto& block : decisions) {
    block.resize(r.get_count("decision count", 4 + 8));
    for (StrategyDecision& d : block) {
      d.key = r.get_str("decision key length");
      d.value = r.get<double>("decision value");
      if (!std::isfinite(d.value)) r.corrupt("decision " + d.key + " is not a finite number");
    }
  }
  if (r.left() != 0) r.corrupt(std::to_string(r.left()) + " bytes after the records");
  // Appended only once the whole buffer has been read: a corrupt one leaves `into` as it was.
  into.spans.insert(into.spans.end(), std::make_move_iterator(spans.begin()), std::make_move_iterator(spans.end()));
  into.traffic.push_back(std::move(peers));
  into.routing.push_back(std::move(blocks));
  into.decisions.push_back(std::move(decisions));
}

}  // namespace moebench

#include "models/timelineflows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace moebench::gui {

namespace {
// What a send and its receive share, with the rank the span is on (the receiver's for a send).
struct Key {
  int rank = 0;
  int64_t step = 0;
  int layer = -1, expert = -1, chunk = -1;
  std::string_view name;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<std::string_view>()(k.name);
    auto mix = [&h](uint64_t v) { h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(uint64_t(uint32_t(k.rank)));
    mix(uint64_t(k.step));
    mix(uint64_t(uint32_t(k.layer)) << 32 | uint32_t(k.expert));
    mix(uint64_t(uint32_t(k.chunk)));
    return h;
  }
};

Key keyOf(const SpanRow& s, int rank) { return Key{rank, s.step, s.layer, s.expert, s.chunk, s.name}; }
}  // namespace

std::vector<FlowLink> flowLinks(const std::vector<SpanRow>& spans) {
  std::vector<FlowLink> out;
  // sends grouped by (receiver's key, sender rank)
  struct SendKey {
    Key key;
    int sender = 0;
    bool operator==(const SendKey&) const = default;
  };
  struct SendKeyHash {
    size_t operator()(const SendKey& k) const { return KeyHash()(k.key) * 31 + size_t(uint32_t(k.sender)); }
  };
  std::unordered_map<SendKey, std::vector<int>, SendKeyHash> sends;
  std::unordered_map<Key, std::vector<int>, KeyHash> candidates;
  for (size_t i = 0; i < spans.size(); ++i) {
    const SpanRow& s = spans[i];
    if (s.peer < 0 || s.peer == s.rank) continue;
    const Key k = keyOf(s, s.peer);
    sends[SendKey{k, s.rank}].push_back(int(i));
    candidates.try_emplace(k);
  }
  if (sends.empty()) return out;
  for (size_t j = 0; j < spans.size(); ++j) {
    const SpanRow& s = spans[j];
    auto it = candidates.find(keyOf(s, s.rank));
    if (it != candidates.end()) it->second.push_back(int(j));
  }
  auto byStart = [&spans](int a, int b) {
    const double sa = spans[size_t(a)].start, sb = spans[size_t(b)].start;
    return sa != sb ? sa < sb : a < b;
  };
  for (auto& [k, list] : candidates) std::sort(list.begin(), list.end(), byStart);
  for (auto& [sk, list] : sends) {
    std::sort(list.begin(), list.end(), byStart);
    const std::vector<int>& cands = candidates.at(sk.key);
    size_t next = 0;
    for (int c : cands) {
      if (next == list.size()) break;
      const int peer = spans[size_t(c)].peer;
      if (peer != sk.sender && peer != -1) continue;
      out.push_back(FlowLink{list[next++], c});
    }
  }
  std::sort(out.begin(), out.end(), [](const FlowLink& a, const FlowLink& b) {
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
  return out;
}

VisibleFlows visibleFlows(const std::vector<SpanRow>& spans, const std::vector<FlowLink>& links,
                          const LaneLayout& layout, const TimeAxis& axis, int maxArrows) {
  VisibleFlows out;
  if (axis.width <= 0 || axis.span() <= 0 || maxArrows <= 0) return out;
  std::vector<FlowArrow> all;
  std::vector<std::tuple<int, int, long>> cells;  // (send sub-lane, receive sub-lane, tail column)
  for (size_t i = 0; i < links.size(); ++i) {
    const SpanRow& a = spans.at(size_t(links[i].from));
    const SpanRow& b = spans.at(size_t(links[i].to));
    const double ta = a.start + a.duration, tb = b.start + b.duration;
    if (std::max(ta, tb) < axis.t0 || std::min(ta, tb) > axis.t1) continue;
    const int la = layout.subLaneIndex(a.rank, a.stream), lb = layout.subLaneIndex(b.rank, b.stream);
    if (la < 0 || lb < 0) continue;
    const SubLane& sa = layout.subLanes[size_t(la)];
    const SubLane& sb = layout.subLanes[size_t(lb)];
    FlowArrow f;
    f.link = int(i);
    f.x1 = axis.toX(ta);
    f.y1 = sa.top + 0.5 * sa.height;
    f.x2 = axis.toX(tb);
    f.y2 = sb.top + 0.5 * sb.height;
    all.push_back(f);
    cells.emplace_back(la, lb, long(std::floor(f.x1)));
  }
  out.total = int(all.size());
  if (int(all.size()) <= maxArrows) {
    out.arrows = std::move(all);
    return out;
  }
  struct CellHash {
    size_t operator()(const std::tuple<int, int, long>& c) const {
      return (size_t(uint32_t(std::get<0>(c))) * 1000003u + size_t(uint32_t(std::get<1>(c)))) * 1000003u +
             size_t(std::get<2>(c));
    }
  };
  std::unordered_set<std::tuple<int, int, long>, CellHash> seen;
  std::vector<FlowArrow> thinned;
  for (size_t i = 0; i < all.size(); ++i)
    if (seen.insert(cells[i]).second) thinned.push_back(all[i]);
  if (int(thinned.size()) <= maxArrows) {
    out.arrows = std::move(thinned);
    return out;
  }
  out.arrows.reserve(size_t(maxArrows));
  for (int k = 0; k < maxArrows; ++k)  // evenly spaced: the k-th of maxArrows equal slices
    out.arrows.push_back(thinned[size_t(double(k) * double(thinned.size()) / double(maxArrows))]);
  return out;
}

}  // namespace moebench::gui

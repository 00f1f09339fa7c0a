#pragma once
// Flow arrows of the timeline (Perfetto's flows): from a point-to-point send to its receive.
// No widgets; tested headless in tests/tst_timeline_tools.cpp.
//
// How the runtime records point-to-point transfers (SpanRow::peer):
//   - a task with GraphTask::peer set records it (pipeline sends "pp.forward" / "pp.backward" on
//     a comm stream, "pp.tied_grad", data-centric "janus.pull" / "janus.push_grad" gets and puts,
//     copies), and a task whose bytes all go to one rank records that rank (thread_executor.cpp,
//     predicted_run.cpp: e.g. a FasterMoE shadow reduce to its binomial parent, a ring all-reduce
//     to its right neighbour, an exchange chunk that sends to one rank only);
//   - the receive is a span of the same name on the peer: the pipeline's blocking receive is the
//     receiver's host-stream "pp.forward" / "pp.backward" with the same layer (the receiving
//     stage's first block) and chunk (micro-batch), recorded with peer -1 since it sends nothing;
//     an exchange between two ranks ("pp.tied_grad", a 2-rank all-reduce) has the same span on
//     both with peer = the other.
//
// The matching rule (flowLinks): a send is a span on rank r whose peer p >= 0 and p != r. Its
// receive candidates are the spans on rank p with the same step, name, layer, expert and chunk
// whose peer is r or -1 (a span that names a third rank is that rank's send, not this receive:
// a ring all-reduce over more than 2 ranks has no arrows). The k-th send (in start order) from r
// to p of such a key is paired with the k-th candidate (in start order) on p; extra sends or
// candidates stay unpaired. A candidate with peer -1 may receive from several senders (the owner
// of a reduction tree). One-sided gets and puts ("janus.pull", "janus.push_grad",
// "janus.prefetch") have no span on the target rank and so no arrow.
//
// An arrow goes from the end of the send (the message has left) to the end of the receive (the
// receiver has it), each in the middle of its span's sub-lane.
#include <vector>

#include "models/timelinegeometry.h"
#include "moebench/store/run_store.h"

namespace moebench::gui {

struct FlowLink {
  int from = 0;  // index of the send in the spans
  int to = 0;    // index of its receive
  bool operator==(const FlowLink&) const = default;
};

// Every send paired with its receive (the rule above), ordered by the send's index. O(n log n).
std::vector<FlowLink> flowLinks(const std::vector<SpanRow>& spans);

// One arrow on screen: x in pixels, y in layout coordinates (the sub-lanes' middle).
struct FlowArrow {
  int link = 0;  // index into the links
  double x1 = 0, y1 = 0;  // tail: the send's end
  double x2 = 0, y2 = 0;  // head: the receive's end
};

struct VisibleFlows {
  std::vector<FlowArrow> arrows;
  int total = 0;  // links crossing the visible range (arrows.size() <= total)
};

// The arrows to draw: links whose time range [min(ends), max(ends)] meets [axis.t0, axis.t1] and
// whose two sub-lanes are in the layout. When more than maxArrows cross the view (zoomed out),
// only the first arrow per (send sub-lane, receive sub-lane, pixel column of the tail) is kept,
// and if that is still too many, an evenly spaced maxArrows of them: at most maxArrows.
VisibleFlows visibleFlows(const std::vector<SpanRow>& spans, const std::vector<FlowLink>& links,
                          const LaneLayout& layout, const TimeAxis& axis, int maxArrows);

}  // namespace moebench::gui

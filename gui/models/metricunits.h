#pragma once
// What a stored metric measures, for axis titles and values a researcher can read (issue 35,
// point 4). The keys are the ones `moebench run` and `moebench simulate` record
// (core/src/train/run_recorder.cpp, core/src/plan/predicted_run.cpp); other keys are plain
// numbers titled by their key.
//   loss, aux_loss, eval_loss, total_loss   plain
//   step_ms, comm_ms, *_ms                  milliseconds
//   tokens_per_s                            tokens/s
//   bytes_intra, bytes_inter, *_bytes       bytes per step, scaled to kB/MB/GB on the axis.
//       Measured runs record the bytes rank 0 sent in the step; runs of `moebench simulate`
//       record every rank's (the Traffic view always shows every rank's): the title says which.
//   *_rate, lr, grad_norm                   plain
#include <QString>

namespace moebench::gui {

enum class MetricKind { plain, milliseconds, tokensPerSecond, bytes };

struct MetricUnit {
  MetricKind kind = MetricKind::plain;
  QString title;  // axis title without scaling, e.g. "step time (ms)", "bytes inter-node per step"
};

MetricUnit metricUnit(const QString& key, bool predicted);

// A scale for bytes so the axis numbers stay below 1000: {divisor, "MB"}; plain kinds {1, ""}.
struct AxisScale {
  double divisor = 1;
  QString unit;
};
AxisScale axisScale(MetricKind kind, double maxAbs);

// The axis title with the scale's unit: "bytes inter-node per step (MB)".
QString scaledTitle(const MetricUnit& unit, const AxisScale& scale);

// One value as a tooltip shows it: "12.3 ms", "1.25 MB", "48,200 tokens/s", "3.4567".
QString formatMetricValue(MetricKind kind, double value);

}  // namespace moebench::gui

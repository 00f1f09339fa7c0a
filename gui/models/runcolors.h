#pragma once
// One colour per run, the same in every view (issue 35: runs side by side): taken from the run's
// id, so a run keeps its colour whichever runs are selected with it and after a reload. Twelve
// well-separated hues (Tableau 10 plus two), then the same hues darker for ids beyond them.
#include <QColor>

#include <cstdint>

namespace moebench::gui {

QColor runColor(int64_t runId);

}  // namespace moebench::gui

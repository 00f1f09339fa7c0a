#pragma once
// How every view names where a run's numbers come from (issue 35: predictions and emulations
// that say what they are): "predicted" for a run `moebench simulate` wrote (tag "predicted"),
// "emulated" for a run measured under the link emulator (tag "emulated": real work, links paced
// to another cluster's), else "measured".
#include <QString>

#include <string>
#include <utility>
#include <vector>

namespace moebench::gui {

QString runKindText(const std::vector<std::pair<std::string, std::string>>& tags);

}  // namespace moebench::gui

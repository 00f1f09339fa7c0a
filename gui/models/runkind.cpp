#include "models/runkind.h"

#include <QObject>

namespace moebench::gui {

QString runKindText(const std::vector<std::pair<std::string, std::string>>& tags) {
  bool emulated = false;
  for (const auto& [key, value] : tags) {
    if (key == "predicted") return QObject::tr("predicted");
    emulated = emulated || key == "emulated";
  }
  return emulated ? QObject::tr("emulated") : QObject::tr("measured");
}

}  // namespace moebench::gui

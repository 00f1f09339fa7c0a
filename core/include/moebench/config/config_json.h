#pragma once
// config_from_json: a Config read back from config_to_json's canonical JSON, as a run's
// RunInfo::config_json stores it (perf/ddl_prediction.h rebuilds a run's cluster model from it).
//   - keys missing from the JSON keep their defaults (configs stored by older builds);
//   - keys this build does not know are ignored (configs stored by newer builds);
//   - cluster.file is kept as text but never read: the stored [cluster] keys already hold the
//     cluster file's values (config_to_json writes the resolved config);
//   - nothing is validated: the run's config was checked when the run started.
// Throws std::invalid_argument for text that is not a JSON object and for a value of the wrong
// type, naming the key: "stored config: model.hidden: expected integer, got \"wide\"".
#include <string>

#include <nlohmann/json.hpp>

#include "moebench/config/config.h"

namespace moebench {

Config config_from_json(const nlohmann::json& json);
Config config_from_json(const std::string& json_text);

}  // namespace moebench

#include "moebench/perf/datasheet_peaks.h"

namespace moebench {

std::optional<DatasheetPeak> datasheet_peak(const std::string& name) {
  const std::string h100 = "NVIDIA H100 Tensor Core GPU datasheet", h200 = "NVIDIA H200 Tensor Core GPU datasheet",
                    a100 = "NVIDIA A100 Tensor Core GPU datasheet";
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  // CUDA's names: "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
  // "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", ...
  if (has("H200")) return DatasheetPeak{"H200 SXM", 1979.0 / 2, 67.0, h200};
  if (has("H100")) {
    if (has("PCIe")) return DatasheetPeak{"H100 PCIe", 1513.0 / 2, 51.0, h100};
    if (has("NVL")) return DatasheetPeak{"H100 NVL", 1671.0 / 2, 60.0, h100};
    return DatasheetPeak{"H100 SXM", 1979.0 / 2, 67.0, h100};
  }
  if (has("A100")) return DatasheetPeak{"A100", 624.0 / 2, 19.5, a100};
  return std::nullopt;
}

}  // namespace moebench

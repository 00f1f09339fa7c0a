#pragma once
// Datasheet peak rates of the GPUs moebench reports model FLOPs utilisation (MFU) against,
// dense (NVIDIA's tables give the tensor-core rates with 2:4 sparsity; dense is half), in
// TFLOP/s. Sources:
//   H100 SXM, H100 PCIe, H100 NVL: NVIDIA H100 Tensor Core GPU datasheet
//     (https://www.nvidia.com/en-us/data-center/h100/): BF16 tensor core 1,979 / 1,513 / 1,671
//     TFLOPS with sparsity; FP32 67 / 51 / 60 TFLOPS.
//   H200 (SXM): NVIDIA H200 Tensor Core GPU datasheet
//     (https://www.nvidia.com/en-us/data-center/h200/): BF16 1,979 with sparsity; FP32 67.
//   A100 (SXM and PCIe): NVIDIA A100 Tensor Core GPU datasheet
//     (https://www.nvidia.com/en-us/data-center/a100/): BF16 624 with sparsity; FP32 19.5.
// The FP32 figure is the CUDA cores' (fp32 GEMMs without TF32, what run.precision = "fp32"
// computes).
#include <optional>
#include <string>

namespace moebench {

struct DatasheetPeak {
  std::string gpu;            // the table's name for it ("H100 SXM")
  double bf16_tflops = 0;     // dense BF16 tensor-core rate
  double fp32_tflops = 0;     // FP32 (no tensor cores)
  std::string source;         // the datasheet it comes from
};

// The entry for a CUDA device name (cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3");
// nullopt for a GPU the table does not hold.
std::optional<DatasheetPeak> datasheet_peak(const std::string& device_name);

}  // namespace moebench

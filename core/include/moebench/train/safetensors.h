#pragma once
// safetensors files (the Hugging Face format, readable by other tools):
//   8 bytes   little-endian u64 N, the header length
//   N bytes   JSON header {"__metadata__": {string: string},
//                          "name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
//             padded with spaces so that the data starts at a multiple of 8
//   data      raw little-endian tensor bytes; offsets are relative to the start of the data
// Only F32 is written; reading rejects other dtypes. Every error is a CheckpointError whose
// message starts with the file name.
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace moebench {

class CheckpointError : public std::runtime_error {
 public:
  explicit CheckpointError(const std::string& message) : std::runtime_error(message) {}
};

struct TensorRef {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // product(shape) floats
  // Without data: writes the tensor's product(shape) floats into the buffer it is given, when the
  // writer reaches it (values held elsewhere, e.g. the SSD tier's moments: one tensor at a time).
  std::function<void(float*)> fill = nullptr;
};

// Writes the tensors in the given order (data offsets ascending) plus the metadata to
// path + ".tmp", then renames it to path, so a reader never sees a half-written file.
// Throws CheckpointError for duplicate or reserved names, negative dimensions and I/O errors.
void write_safetensors(const std::string& path, const std::vector<TensorRef>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

struct LoadedTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

struct SafetensorsFile {
  std::map<std::string, LoadedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Reads and validates a whole file. Throws CheckpointError for: a missing or unreadable file,
// a header length larger than the file, a header that is not valid JSON (or not the expected
// shape), an unsupported dtype, data offsets out of range, overlapping, or not matching
// product(shape) * 4 bytes.
SafetensorsFile read_safetensors(const std::string& path);

// The same checks on a whole file held in memory; `name` starts every message (read_safetensors
// passes the path).
SafetensorsFile parse_safetensors(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace moebench

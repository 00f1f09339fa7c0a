// Fuzz target: the safetensors reader (parse_safetensors, the in-memory core of
// read_safetensors) on arbitrary bytes. It either returns tensors whose data matches their shape
// or throws CheckpointError; any other exception or a crash is a finding.
#include <cstdio>
#include <cstdlib>
#include <span>

#include "moebench/train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const moebench::SafetensorsFile file = moebench::parse_safetensors(std::span(data, size), "fuzz.safetensors");
    for (const auto& [name, t] : file.tensors) {
      size_t n = 1;
      for (int64_t d : t.shape) n *= (size_t)d;
      if (n != t.data.size() || name.empty() || name == "__metadata__") {
        std::fprintf(stderr, "fuzz_safetensors: tensor \"%s\" accepted with %zu values for its shape\n", name.c_str(),
                     t.data.size());
        std::abort();
      }
    }
  } catch (const moebench::CheckpointError&) {
  }
  return 0;
}

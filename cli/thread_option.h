#pragma once
// The --threads option of calibrate and the benches: 0 (all cores) to kMaxThreads, as
// run.threads (config/config.h).
#include <CLI/CLI.hpp>

#include <string>

#include "moebench/config/config.h"

namespace moebench::cli {

inline CLI::Validator thread_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long v = 0;
        try {
          v = std::stoll(text);
        } catch (const std::exception&) {
          return "";  // not a number: the conversion says so
        }
        if (v < 0 || v > kMaxThreads)
          return "must be 0 (all cores) to " + std::to_string(kMaxThreads) + " threads of one process, got " + text;
        return "";
      },
      "0.." + std::to_string(kMaxThreads));
}

}  // namespace moebench::cli

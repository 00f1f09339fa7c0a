#pragma once
// UsageError: what the user asked for cannot be done as asked, though every config key is
// valid: an output directory that holds an earlier run, a resume from a checkpoint at or past
// train.steps, a local launch beyond the machine's bounds. The CLI prints its message once and
// exits with 2 (bad usage), like a ConfigError.
#include <stdexcept>

namespace moebench {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace moebench

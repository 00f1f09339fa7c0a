# Shared warning flags for first-party targets.
add_library(moebench_warnings INTERFACE)
target_compile_options(moebench_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>)

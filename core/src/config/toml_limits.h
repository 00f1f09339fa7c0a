#pragma once
// Internal to config/: the size and shape limits a TOML text must respect before toml++ parses
// it, and the linear pre-scan that enforces them. toml++ builds one nested table per dotted key
// part and header part and walks them recursively (a 40,000-part key overflows the stack), and
// the loader's "did you mean" work grows with key length; bounding the input here keeps parsing
// and error reporting linear and fast for any text.
//
// The limits are far above any real moebench config (keys are `section.key`, values are
// numbers, strings and flat integer arrays, files are a few KB); README "Config limits" lists
// them.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace moebench::config_detail {

inline constexpr size_t kMaxConfigBytes = 1 << 20;  // a config file or a --set value: 1 MiB
inline constexpr size_t kMaxKeyBytes = 1024;        // one key as written, dots and quotes included
inline constexpr int kMaxKeyParts = 32;             // parts of one dotted key or table header
// Tables and arrays around a value: header parts + dotted key parts + open [ and { brackets.
inline constexpr int kMaxNestingDepth = 64;

struct TomlLimitViolation {
  int line = 0;    // 1-based
  int column = 0;  // 1-based, in bytes
  std::string message;  // what exceeds which limit, e.g. "dotted key `a.a.a...` has 40000 parts; ..."
};

// "<what> is N bytes; the limit is 1048576 bytes (1 MiB)" when `bytes` is over kMaxConfigBytes.
// `what` names the text: "the config file", "the value".
std::optional<std::string> size_limit_message(size_t bytes, std::string_view what);

// The first key or nesting limit `text` exceeds, else nullopt (check its size first). Linear in
// the text and without recursion; it reads strings (basic, literal, multi-line), comments,
// headers, dotted keys, arrays and inline tables as TOML does and is tolerant of syntax errors,
// which toml++ reports afterwards.
std::optional<TomlLimitViolation> check_toml_limits(std::string_view text);

}  // namespace moebench::config_detail

#pragma once
// Internal to config/: what a TOML text must satisfy before toml++ may parse it, and the linear
// pre-scan that checks it (parse_config, --set values, the editor's text functions).
//  - Size and shape limits. toml++ builds one nested table per dotted key part and header part
//    and walks them recursively (a 40,000-part key overflows the stack), and the loader's work per
//    key grows with its length. The limits are far above any real moebench config (keys are
//    `section.key`, values numbers, strings and flat integer arrays, files a few KB); docs/limits.md
//    lists them.
//  - Characters toml++ 3.3.0 (Debian 12) cannot classify: its non-ASCII whitespace test reaches
//    __builtin_unreachable for U+00A1-U+0499, U+2C5E-U+3057 and U+FB26-U+FEFE but U+3000 (found by
//    fuzz_config). It runs that test on characters outside strings and comments, where TOML 1.0
//    allows only ASCII anyway, and on the first character of a line continued by a backslash
//    inside a """multi-line string""". Both are reported here as syntax errors instead.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace moebench::config_detail {

inline constexpr size_t kMaxConfigBytes = 1 << 20;  // a config text or a --set value: 1 MiB
inline constexpr size_t kMaxKeyBytes = 1024;        // one key as written, dots and quotes included
inline constexpr int kMaxKeyParts = 32;             // parts of one dotted key or table header
// Tables and arrays around a value: header parts + dotted key parts + open [ and { brackets.
inline constexpr int kMaxNestingDepth = 64;

struct TomlPrecheckIssue {
  int line = 0;         // 1-based
  int column = 0;       // 1-based, in bytes
  std::string message;  // "dotted key `a.a.a...` has 40000 parts; ...", "TOML syntax error: ..."
  bool syntax = false;  // not valid TOML (a character toml++ cannot read), rather than over a limit
};

// "<what> is N bytes; the limit is 1048576 bytes (1 MiB)" when `bytes` is over kMaxConfigBytes.
// `what` names the text: "the config file", "the value".
std::optional<std::string> size_limit_message(size_t bytes, std::string_view what);

// The offset of the first byte of `s` that is not well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, at most U+10FFFF), else npos. toml++ checks the texts it parses; --set
// values it does not accept are taken as bare strings and must be checked with this.
size_t invalid_utf8_at(std::string_view s);

// The first problem of `text` (check its size first), else nullopt. Linear in the text and
// without recursion; it reads strings (basic, literal, multi-line), comments, headers, dotted
// keys, arrays and inline tables as TOML does and is tolerant of other syntax errors, which
// toml++ reports afterwards.
std::optional<TomlPrecheckIssue> precheck_toml(std::string_view text);

}  // namespace moebench::config_detail

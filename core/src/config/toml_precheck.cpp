// The TOML pre-scan of toml_precheck.h: one pass over the text, an explicit stack for arrays and
// inline tables (no recursion), every key measured in parts and bytes, every value's nesting
// counted, every byte outside strings and comments checked to be ASCII. Where the text is not
// valid TOML the scan reads on permissively (any ASCII byte that is not TOML punctuation is a
// bare-key or value byte), so that whatever toml++ accepts up to its first syntax error has been
// measured here the same way.
#include "toml_precheck.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "config_detail.h"

namespace moebench::config_detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_ascii(char c) { return (unsigned char)c < 0x80; }

// Bytes that end a scalar value (a number, a boolean, a date) for toml++, which reads one up to
// the next of them whatever comes before (`0'''x` is one value to it, not 0 and a string).
bool is_value_terminator(char c) {
  return c == ' ' || c == '\t' || (c >= '\n' && c <= '\r') || c == ']' || c == '}' || c == ',' || c == '#';
}

// Bytes that end a bare key.
bool is_punct(char c) {
  switch (c) {
    case ' ': case '\t': case '\r': case '\n': case '.': case '=': case '[': case ']':
    case '{': case '}': case ',': case '#': case '"': case '\'':
      return true;
    default:
      return false;
  }
}

// The UTF-8 code point at p and its length; length 0 where the bytes are not well-formed UTF-8
// (an overlong form, a surrogate, above U+10FFFF, a bad or missing continuation byte).
std::pair<char32_t, size_t> decode(std::string_view t, size_t p) {
  const auto b = (unsigned char)t[p];
  const size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || p + len > t.size()) return {0, 0};
  char32_t c = len == 1 ? b : b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto cont = (unsigned char)t[p + k];
    if ((cont & 0xC0) != 0x80) return {0, 0};
    c = (c << 6) | (cont & 0x3F);
  }
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return {0, 0};
  return {c, len};
}

// toml++ 3.3.0's is_non_ascii_horizontal_whitespace(), the characters it answers true for ...
bool tomlpp_is_nonascii_space(char32_t c) {
  return c == 0xA0 || c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200B) || c == 0x202F ||
         c == 0x205F || c == 0x2060 || c == 0x3000 || c == 0xFEFF;
}
// ... and those for which it reaches __builtin_unreachable: the rest of its lookup buckets 0,
// 11 and 63 of 0x3FA code points from U+00A0 (U+00A1-U+0499, U+2C5E-U+3057, U+FB26-U+FEFE).
bool tomlpp_cannot_classify(char32_t c) {
  if (c < 0xA0 || c > 0xFEFF || tomlpp_is_nonascii_space(c)) return false;
  const char32_t bucket = (c - 0xA0) / 0x3FA;
  return bucket == 0 || bucket == 11 || bucket == 63;
}

// "'λ' (U+03BB)", or "byte 0xFF" for malformed UTF-8.
std::string describe_char(std::string_view t, size_t p) {
  const auto [c, len] = decode(t, p);
  char buf[32];
  if (len == 0) std::snprintf(buf, sizeof buf, "byte 0x%02X", (unsigned char)t[p]);
  else std::snprintf(buf, sizeof buf, "(U+%04X)", (unsigned)c);
  return len == 0 ? std::string(buf) : "'" + std::string(t.substr(p, len)) + "' " + buf;
}

class Prescanner {
 public:
  explicit Prescanner(std::string_view text) : t_(text), n_(text.size()) {}

  std::optional<TomlPrecheckIssue> run() {
    size_t p = t_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // a UTF-8 byte order mark, as toml++ skips it
    int table_depth = 0;  // parts of the current [table] header (+1 under [[array]])
    while (p < n_ && !found_) {
      p = skip_space(p);
      if (p >= n_) break;
      const char c = t_[p];
      if (c == '\n') {
        ++p;
      } else if (c == '#') {
        p = line_end(p);
      } else if (c == '[') {
        const bool array = p + 1 < n_ && t_[p + 1] == '[';
        const size_t key_at = p + (array ? 2 : 1);
        const int parts = scan_key(key_at, p, "table header");
        table_depth = parts + (array ? 1 : 0);
        check_depth(table_depth, p);
        p = rest_of_line(p);  // `]` or `]]`, then a comment
      } else {
        const size_t key_at = p;
        const int parts = scan_key(key_at, p, "key");
        p = skip_space(p);
        if (parts == 0 || p >= n_ || t_[p] != '=') {
          p = rest_of_line(p);  // not a key = value line: a syntax error toml++ reports
          continue;
        }
        p = scan_value(p + 1, table_depth + parts);
        p = rest_of_line(p);  // after a value only a comment may follow on its line
      }
    }
    return found_;
  }

 private:
  size_t skip_space(size_t p) const {
    while (p < n_ && is_space(t_[p])) ++p;
    return p;
  }
  size_t line_end(size_t p) const {
    const size_t nl = t_.find('\n', p);
    return nl == std::string_view::npos ? n_ : nl;
  }
  // The end of p's line, where only a comment is valid TOML; anything else outside strings
  // must still be ASCII.
  size_t rest_of_line(size_t p) {
    while (p < n_ && t_[p] != '\n' && !found_) {
      if (t_[p] == '#') return line_end(p);
      if (t_[p] == '"' || t_[p] == '\'') p = skip_string(p);
      else if (!is_ascii(t_[p])) return not_ascii(p);
      else ++p;
    }
    return p;
  }
  size_t not_ascii(size_t p) {
    fail(p, "TOML syntax error: " + describe_char(t_, p) + " outside a string or comment (TOML allows only ASCII there)",
         /*syntax=*/true);
    return n_;
  }

  // p at a quote: the position after the string (single-line: at most its line's end).
  size_t skip_string(size_t p) {
    const char q = t_[p];
    const bool basic = q == '"';
    if (p + 2 < n_ && t_[p + 1] == q && t_[p + 2] == q) {  // multi-line
      size_t i = p + 3;
      while (i < n_) {
        if (basic && t_[i] == '\\') {
          i = after_escape(i);
        } else if (t_[i] == q && i + 2 < n_ && t_[i + 1] == q && t_[i + 2] == q) {
          size_t j = i + 3;
          for (int extra = 0; extra < 2 && j < n_ && t_[j] == q; ++extra) ++j;  // """a"""" is legal
          return j;
        } else {
          ++i;
        }
      }
      return n_;
    }
    size_t i = p + 1;
    while (i < n_ && t_[i] != '\n') {
      if (basic && t_[i] == '\\' && i + 1 < n_ && t_[i + 1] != '\n') i += 2;
      else if (t_[i++] == q) return i;
    }
    return i;
  }

  // i at a backslash in a multi-line basic string: the position after the escape. toml++ asks
  // whether the character right after the backslash is whitespace, and after a line-ending
  // backslash the same of the first character that is not a space, tab or newline.
  size_t after_escape(size_t i) {
    if (i + 1 >= n_) return n_;
    const char e = t_[i + 1];
    if (!is_ascii(e)) {
      fail(i, "TOML syntax error: '\\' followed by " + describe_char(t_, i + 1) + " is not an escape sequence",
           /*syntax=*/true);
      return n_;
    }
    if (e != ' ' && e != '\t' && e != '\r' && e != '\n') return i + 2;
    size_t j = i + 1;
    while (j < n_) {
      if (is_space(t_[j]) || t_[j] == '\n') {
        ++j;
        continue;
      }
      if (is_ascii(t_[j])) break;
      const auto [c, len] = decode(t_, j);
      if (len == 0) break;  // malformed UTF-8: toml++ rejects it
      if (tomlpp_cannot_classify(c)) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "\\u%04X", (unsigned)c);
        fail(j, describe_char(t_, j) + " begins a line continued by a backslash in a multi-line string, which "
                "toml++ 3.3.0 cannot read; write it as " + hex + " or join the lines",
             /*syntax=*/true);
        return n_;
      }
      if (!tomlpp_is_nonascii_space(c)) break;
      j += len;
    }
    return j;
  }

  // A dotted key at `from` (after optional spaces); `p` ends after its last part. Returns the
  // number of parts (0: no key there) and records a violation for too many parts or bytes.
  int scan_key(size_t from, size_t& p, const char* what) {
    p = skip_space(from);
    const size_t begin = p;
    size_t end = p;
    int parts = 0;
    while (p < n_ && !found_) {
      const char c = t_[p];
      if (c == '"' || c == '\'') {
        p = skip_string(p);
      } else if (!is_punct(c)) {
        for (; p < n_ && !is_punct(t_[p]); ++p)
          if (!is_ascii(t_[p])) {
            not_ascii(p);
            return parts;
          }
      } else {
        break;
      }
      ++parts;
      end = p;
      const size_t dot = skip_space(p);
      if (dot >= n_ || t_[dot] != '.') break;
      p = skip_space(dot + 1);
    }
    p = end;
    const std::string_view key = t_.substr(begin, end - begin);
    if (parts > kMaxKeyParts)
      fail(begin, std::string(what) + " `" + excerpt(key, 40) + "` has " + std::to_string(parts) +
                      " dotted parts; the limit is " + std::to_string(kMaxKeyParts) +
                      " (moebench keys are section.key)");
    else if (key.size() > kMaxKeyBytes)
      fail(begin, std::string(what) + " `" + excerpt(key, 40) + "` is " + std::to_string(key.size()) +
                      " bytes long; the limit is " + std::to_string(kMaxKeyBytes) + " bytes");
    return parts;
  }

  void check_depth(int depth, size_t at) {
    if (depth > kMaxNestingDepth)
      fail(at, "a value nested " + std::to_string(depth) +
                   " levels deep (table header parts, dotted key parts, arrays and inline tables); the limit is " +
                   std::to_string(kMaxNestingDepth));
  }

  struct Frame {
    bool inline_table;  // else an array
    int depth;          // nesting of the values directly inside
  };

  // p after the `=` of a key whose value sits at nesting `depth`: the position after the value
  // (a top-level scalar ends at the first space, the rest of its line is left to the caller).
  size_t scan_value(size_t p, int depth) {
    check_depth(depth, p);
    enum class Next { value, key, separator };
    std::vector<Frame> stack;
    Next next = Next::value;
    int value_depth = depth;
    while (p < n_ && !found_) {
      p = skip_space(p);
      if (p >= n_) break;
      const char c = t_[p];
      if (c == '\n' || c == '#') {
        if (stack.empty()) return p;  // a value that has not started: a syntax error
        p = c == '#' ? line_end(p) : p + 1;
        continue;
      }
      if (next == Next::separator || c == ',' || c == ']' || c == '}') {
        if (stack.empty()) return p;
        if (c == ']' || c == '}') {
          stack.pop_back();
          ++p;
          if (stack.empty()) return p;
          next = Next::separator;
          continue;
        }
        if (c == ',') ++p;  // else a missing comma: read on as if it were there
        next = stack.back().inline_table ? Next::key : Next::value;
        value_depth = stack.back().depth;
        if (c == ',') continue;
      }
      if (next == Next::key) {  // `dotted.key = value` inside { }
        const int parts = scan_key(p, p, "key");
        p = skip_space(p);
        if (p < n_ && t_[p] == '=') ++p;
        value_depth = stack.back().depth + std::max(parts, 1) - 1;
        check_depth(value_depth, p);
        next = Next::value;
        continue;
      }
      if (c == '"' || c == '\'') {
        p = skip_string(p);
      } else if (c == '[' || c == '{') {
        check_depth(value_depth + 1, p);
        stack.push_back({c == '{', value_depth + 1});
        value_depth += 1;
        next = c == '{' ? Next::key : Next::value;
        ++p;
        continue;
      } else {
        do {  // numbers, booleans, dates (or garbage); at least one byte (\v, \f end nothing here)
          if (!is_ascii(t_[p])) return not_ascii(p);
        } while (++p < n_ && !is_value_terminator(t_[p]));
      }
      if (stack.empty()) return p;
      next = Next::separator;
    }
    return p;
  }

  void fail(size_t at, std::string message, bool syntax = false) {
    if (found_) return;
    const auto before = t_.substr(0, std::min(at, n_));
    const size_t nl = before.rfind('\n');
    const int line = 1 + (int)std::count(before.begin(), before.end(), '\n');
    const int column = 1 + (int)(nl == std::string_view::npos ? before.size() : before.size() - nl - 1);
    found_ = TomlPrecheckIssue{line, column, std::move(message), syntax};
  }

  std::string_view t_;
  size_t n_;
  std::optional<TomlPrecheckIssue> found_;
};

}  // namespace

std::optional<std::string> size_limit_message(size_t bytes, std::string_view what) {
  if (bytes <= kMaxConfigBytes) return std::nullopt;
  return std::string(what) + " is " + std::to_string(bytes) + " bytes; the limit is " +
         std::to_string(kMaxConfigBytes) + " bytes (1 MiB)";
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode(s, i).second;
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::optional<TomlPrecheckIssue> precheck_toml(std::string_view text) { return Prescanner(text).run(); }

}  // namespace moebench::config_detail

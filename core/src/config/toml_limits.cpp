// The TOML pre-scan of toml_limits.h: one pass over the text, an explicit stack for arrays and
// inline tables (no recursion), every key measured in parts and bytes, every value's nesting
// counted. Where the text is not valid TOML the scan reads on in the most permissive way (any
// byte that is not TOML punctuation is a bare-key or value byte), so that whatever toml++ accepts
// up to its first syntax error has been measured here the same way.
#include "toml_limits.h"

#include <algorithm>
#include <vector>

#include "config_detail.h"

namespace moebench::config_detail {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Bytes that end a bare key or a scalar value.
bool is_punct(char c) {
  switch (c) {
    case ' ': case '\t': case '\r': case '\n': case '.': case '=': case '[': case ']':
    case '{': case '}': case ',': case '#': case '"': case '\'':
      return true;
    default:
      return false;
  }
}

class LimitScanner {
 public:
  LimitScanner(std::string_view text) : t_(text), n_(text.size()) {}

  std::optional<TomlLimitViolation> run() {
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
        p = line_end(p);  // the rest of a header line is `]` or `]]` and a comment
      } else {
        const size_t key_at = p;
        const int parts = scan_key(key_at, p, "key");
        p = skip_space(p);
        if (parts == 0 || p >= n_ || t_[p] != '=') {
          p = line_end(p);  // not a key = value line: a syntax error toml++ reports
          continue;
        }
        p = scan_value(p + 1, table_depth + parts);
        p = line_end(p);  // after a value only a comment may follow on its line
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

  // p at a quote: the position after the string (single-line: at most its line's end).
  size_t skip_string(size_t p) const {
    const char q = t_[p];
    const bool basic = q == '"';
    if (p + 2 < n_ && t_[p + 1] == q && t_[p + 2] == q) {  // multi-line
      size_t i = p + 3;
      while (i < n_) {
        if (basic && t_[i] == '\\') {
          i += 2;
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

  // A dotted key at `from` (after optional spaces); `p` ends after its last part. Returns the
  // number of parts (0: no key there) and records a violation for too many parts or bytes.
  int scan_key(size_t from, size_t& p, const char* what) {
    p = skip_space(from);
    const size_t begin = p;
    size_t end = p;
    int parts = 0;
    while (p < n_) {
      const char c = t_[p];
      if (c == '"' || c == '\'') {
        p = skip_string(p);
      } else if (!is_punct(c)) {
        while (p < n_ && !is_punct(t_[p])) ++p;
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
      fail(at, "nested " + std::to_string(depth) +
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
      } else if (c == '=') {
        ++p;  // `a = = 1`: a syntax error toml++ reports
      } else {
        while (p < n_ && (!is_punct(t_[p]) || t_[p] == '.')) ++p;  // numbers, booleans, dates
      }
      if (stack.empty()) return p;
      next = Next::separator;
    }
    return p;
  }

  void fail(size_t at, std::string message) {
    if (found_) return;
    const auto before = t_.substr(0, std::min(at, n_));
    const size_t nl = before.rfind('\n');
    const int line = 1 + (int)std::count(before.begin(), before.end(), '\n');
    const int column = 1 + (int)(nl == std::string_view::npos ? before.size() : before.size() - nl - 1);
    found_ = TomlLimitViolation{line, column, std::move(message)};
  }

  std::string_view t_;
  size_t n_;
  std::optional<TomlLimitViolation> found_;
};

}  // namespace

std::optional<std::string> size_limit_message(size_t bytes, std::string_view what) {
  if (bytes <= kMaxConfigBytes) return std::nullopt;
  return std::string(what) + " is " + std::to_string(bytes) + " bytes; the limit is " +
         std::to_string(kMaxConfigBytes) + " bytes (1 MiB)";
}

std::optional<TomlLimitViolation> check_toml_limits(std::string_view text) { return LimitScanner(text).run(); }

}  // namespace moebench::config_detail

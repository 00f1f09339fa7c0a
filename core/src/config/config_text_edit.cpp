// Editing one key of a config's TOML text in place (config_text_edit.h). A small tolerant
// scanner finds table headers and `key = value` entries (values scanned over strings, arrays
// and inline tables, so multi-line values are skipped as a whole); the edit then touches only
// the value's bytes, or inserts one line, or appends one section. toml++ checks literals.
#include "moebench/config/config_text_edit.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include <toml++/toml.h>

#include "config_detail.h"
#include "toml_precheck.h"

namespace moebench {

namespace {

using Path = std::vector<std::string>;

// One `key = value` of the text. `owner`: index of the [header] it is under, -1 for the top
// level, or -2 - i for an entry inside the inline table of entry i.
struct Entry {
  Path path;                // full key path: table path + the dotted key
  size_t line_begin = 0;    // start of its line
  size_t key_begin = 0;     // first byte of the key
  size_t value_begin = 0;   // the value literal: [value_begin, value_end)
  size_t value_end = 0;
  size_t line_end = 0;      // after the line's '\n' (or the text's end)
  int owner = -1;
};

struct Header {
  Path path;
  bool array = false;  // [[array of tables]]
  size_t line_end = 0;  // after the header line's '\n'
};

struct Layout {
  std::vector<Header> headers;
  std::vector<Entry> entries;
};

bool is_bare(char c) {
  return std::isalnum((unsigned char)c) || c == '_' || c == '-';
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text), n_(text.size()) {}

  size_t skip_ws(size_t p) const {
    while (p < n_ && (t_[p] == ' ' || t_[p] == '\t')) ++p;
    return p;
  }
  // The position after the '\n' that ends the line containing p (or the text's end).
  size_t next_line(size_t p) const {
    const size_t nl = t_.find('\n', p);
    return nl == std::string_view::npos ? n_ : nl + 1;
  }

  // p at a quote: the position after the closing quote (unterminated: the line's end).
  size_t scan_string(size_t p) const {
    const char q = t_[p];
    if (p + 2 < n_ && t_[p + 1] == q && t_[p + 2] == q) {
      size_t i = p + 3;
      while (i < n_) {
        if (q == '"' && t_[i] == '\\') {
          i += 2;
          continue;
        }
        if (t_[i] == q && i + 2 < n_ && t_[i + 1] == q && t_[i + 2] == q) {
          size_t j = i + 3;
          for (int extra = 0; extra < 2 && j < n_ && t_[j] == q; ++extra) ++j;  // """a"""" is legal
          return j;
        }
        ++i;
      }
      return n_;
    }
    size_t i = p + 1;
    while (i < n_ && t_[i] != '\n') {
      if (q == '"' && t_[i] == '\\' && i + 1 < n_ && t_[i + 1] != '\n') {
        i += 2;
        continue;
      }
      if (t_[i] == q) return i + 1;
      ++i;
    }
    return i;
  }

  // p at the first byte of a value: the position after it.
  size_t scan_value(size_t p) const {
    if (p >= n_) return p;
    const char c = t_[p];
    if (c == '"' || c == '\'') return scan_string(p);
    if (c == '[' || c == '{') {
      int depth = 0;
      size_t i = p;
      while (i < n_) {
        const char ch = t_[i];
        if (ch == '"' || ch == '\'') {
          i = scan_string(i);
          continue;
        }
        if (ch == '#') {  // a comment inside a multi-line array
          const size_t nl = t_.find('\n', i);
          i = nl == std::string_view::npos ? n_ : nl;
          continue;
        }
        if (ch == '\n' && c == '{' && depth == 1) return i;  // inline tables are one line
        if (ch == '[' || ch == '{') ++depth;
        if ((ch == ']' || ch == '}') && --depth == 0) return i + 1;
        ++i;
      }
      return n_;
    }
    size_t i = p;
    while (i < n_ && t_[i] != ' ' && t_[i] != '\t' && t_[i] != '\r' && t_[i] != '\n' && t_[i] != '#')
      ++i;
    return i;
  }

  // Parses a (dotted) key at p into parts; p ends right after the last part.
  bool parse_key(size_t& p, Path& parts) const {
    while (true) {
      p = skip_ws(p);
      if (p >= n_) return false;
      const char c = t_[p];
      if (c == '"' || c == '\'') {
        const size_t e = scan_string(p);
        if (e < p + 2 || t_[e - 1] != c) return false;
        parts.push_back(unquote(t_.substr(p, e - p)));
        p = e;
      } else if (is_bare(c)) {
        const size_t s = p;
        while (p < n_ && is_bare(t_[p])) ++p;
        parts.emplace_back(t_.substr(s, p - s));
      } else {
        return false;
      }
      const size_t j = skip_ws(p);
      if (j < n_ && t_[j] == '.') {
        p = j + 1;
        continue;
      }
      return true;
    }
  }

  Layout scan() const {
    Layout out;
    Path table;
    int owner = -1;
    size_t pos = 0;
    while (pos < n_) {
      const size_t line_begin = pos;
      const size_t i = skip_ws(pos);
      if (i >= n_) break;
      const char c = t_[i];
      if (c == '\n' || c == '\r' || c == '#') {
        pos = next_line(i);
        continue;
      }
      if (c == '[') {
        Header h;
        h.array = i + 1 < n_ && t_[i + 1] == '[';
        size_t k = i + (h.array ? 2 : 1);
        if (!parse_key(k, h.path)) h.path.clear();
        h.line_end = next_line(k);
        out.headers.push_back(h);
        table = h.path;
        owner = (int)out.headers.size() - 1;
        pos = h.line_end;
        continue;
      }
      size_t k = i;
      Path key;
      if (!parse_key(k, key)) {
        pos = next_line(i);
        continue;
      }
      k = skip_ws(k);
      if (k >= n_ || t_[k] != '=') {
        pos = next_line(k);
        continue;
      }
      Entry e;
      e.path = table;
      e.path.insert(e.path.end(), key.begin(), key.end());
      e.line_begin = line_begin;
      e.key_begin = i;
      e.value_begin = skip_ws(k + 1);
      e.value_end = scan_value(e.value_begin);
      e.line_end = next_line(e.value_end);
      e.owner = owner;
      out.entries.push_back(e);
      if (may_hold_keys(e)) scan_inline_table(out, out.entries.size() - 1);
      pos = e.line_end;
    }
    return out;
  }

 private:
  // Whether `e` is an inline table whose entries can be config keys (`run = { name = ... }`,
  // `strategy = { data_centric = { credits = 3 } }`): keys are section.key with sections at
  // most two parts deep, so deeper tables are skipped whole. This bounds the recursion of
  // scan_inline_table to two levels and keeps the scan linear for any nesting.
  bool may_hold_keys(const Entry& e) const {
    return e.path.size() < 3 && e.value_begin < n_ && t_[e.value_begin] == '{';
  }

  // The entries of the inline table that is the value of entries[index].
  void scan_inline_table(Layout& out, size_t index) const {
    const Entry table = out.entries[index];
    size_t p = table.value_begin + 1;
    const size_t stop = table.value_end;
    while (p < stop) {
      p = skip_ws(p);
      if (p >= stop || t_[p] == '}') return;
      Path key;
      if (!parse_key(p, key)) return;
      p = skip_ws(p);
      if (p >= stop || t_[p] != '=') return;
      Entry e;
      e.path = table.path;
      e.path.insert(e.path.end(), key.begin(), key.end());
      e.line_begin = table.line_begin;
      e.key_begin = p;
      e.value_begin = skip_ws(p + 1);
      e.value_end = std::min(scan_value(e.value_begin), stop);
      e.line_end = table.line_end;
      e.owner = -2 - (int)index;
      out.entries.push_back(e);
      if (may_hold_keys(e)) scan_inline_table(out, out.entries.size() - 1);
      p = skip_ws(e.value_end);
      if (p < stop && t_[p] == ',') ++p;
    }
  }

  static std::string unquote(std::string_view quoted) {
    if (quoted.find('\\') == std::string_view::npos) return std::string(quoted.substr(1, quoted.size() - 2));
    try {
      const toml::table t = toml::parse("k = " + std::string(quoted));
      if (auto s = t["k"].value<std::string>()) return *s;
    } catch (const toml::parse_error&) {
    }
    return std::string(quoted.substr(1, quoted.size() - 2));
  }

  std::string_view t_;
  size_t n_;
};

// "line 3, column 7: ..." when `text` is over a size, key or nesting limit or holds characters
// toml++ cannot read (toml_precheck.h): it must not be given to toml++.
std::optional<std::string> limit_problem(std::string_view text) {
  if (auto too_big = config_detail::size_limit_message(text.size(), "the text")) return too_big;
  if (const auto v = config_detail::precheck_toml(text))
    return "line " + std::to_string(v->line) + ", column " + std::to_string(v->column) + ": " + v->message;
  return std::nullopt;
}

int line_at(std::string_view text, size_t pos) {
  return 1 + (int)std::count(text.begin(), text.begin() + (std::ptrdiff_t)std::min(pos, text.size()), '\n');
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// The schema entry of `key`; throws std::invalid_argument naming it when unknown.
const ConfigKeyInfo& key_info(const std::string& key) {
  for (const auto& k : config_keys())
    if (k.name == key) return k;
  std::string msg = "unknown config key `" + key + "`";
  int best = 4;
  std::string pick;
  for (const auto& k : config_keys()) {
    const int d = config_detail::edit_distance(key, k.name, best - 1);
    if (d < best) {
      best = d;
      pick = k.name;
    }
  }
  if (!pick.empty()) msg += "; did you mean `" + pick + "`?";
  else if (key.find('.') == std::string::npos) msg += "; keys are section.key (e.g. moe.top_k)";
  throw std::invalid_argument(msg);
}

// The section path and the name of a known key: "strategy.data_centric.credits" ->
// {strategy, data_centric}, credits.
std::pair<Path, std::string> split_key(const std::string& key) {
  key_info(key);
  Path section;
  size_t from = 0;
  for (size_t dot; (dot = key.find('.', from)) != std::string::npos; from = dot + 1)
    section.push_back(key.substr(from, dot - from));
  return {section, key.substr(from)};
}

std::string joined(const Path& path, size_t from = 0) {
  std::string out;
  for (size_t i = from; i < path.size(); ++i) out += (out.empty() ? "" : ".") + path[i];
  return out;
}

Path with(Path path, const std::string& last) {
  path.push_back(last);
  return path;
}

// The trimmed literal when it is one TOML value on one line; else std::invalid_argument.
std::string checked_literal(const std::string& key, std::string_view value_literal) {
  const std::string lit = trim(value_literal);
  const std::string what = "config key `" + key + "`: ";
  if (lit.empty()) throw std::invalid_argument(what + "empty value; expected a TOML value");
  if (lit.find_first_of("\r\n") != std::string::npos)
    throw std::invalid_argument(what + "the value must be written on one line");
  const std::string hint =
      " (write a number, true or false, an array like [1, 2] or a quoted string like \"text\")";
  const size_t end = Scanner(lit).scan_value(0);
  if (end != lit.size())
    throw std::invalid_argument(what + "`" + lit + "` is not one TOML value: unexpected `" +
                                trim(lit.substr(end)) + "` after `" + lit.substr(0, end) + "`" + hint);
  if (const auto problem = limit_problem("v = " + lit))
    throw std::invalid_argument(what + "`" + config_detail::excerpt(lit) + "` is not a value moebench reads: " +
                                *problem);
  try {
    const toml::table t = toml::parse("v = " + lit);
    if (t.size() != 1 || !t.contains("v")) throw std::invalid_argument(what + "`" + lit + "` is not a TOML value" + hint);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(what + "`" + lit + "` is not a TOML value: " +
                                std::string(e.description()) + hint);
  }
  return lit;
}

// The first entry with this full path (entries under [[array]] headers are not config keys).
const Entry* find_entry(const Layout& layout, const Path& path) {
  for (const auto& e : layout.entries)
    if (e.path == path && !(e.owner >= 0 && layout.headers[size_t(e.owner)].array)) return &e;
  return nullptr;
}

}  // namespace

std::optional<ConfigValueLocation> find_config_value(std::string_view text, const std::string& key) {
  const auto [section, name] = split_key(key);
  const Layout layout = Scanner(text).scan();
  const Entry* e = find_entry(layout, with(section, name));
  if (!e) return std::nullopt;
  ConfigValueLocation loc;
  loc.begin = e->value_begin;
  loc.end = e->value_end;
  loc.literal = std::string(text.substr(e->value_begin, e->value_end - e->value_begin));
  loc.line = line_at(text, e->key_begin);
  return loc;
}

std::optional<std::string> get_config_value(std::string_view text, const std::string& key) {
  auto loc = find_config_value(text, key);
  if (!loc) return std::nullopt;
  return loc->literal;
}

std::string set_config_value(std::string_view text, const std::string& key,
                             const std::string& value_literal) {
  const auto [section, name] = split_key(key);
  const std::string lit = checked_literal(key, value_literal);
  const Layout layout = Scanner(text).scan();
  std::string out(text);
  const std::string eol = text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";

  // 1. The key is written: replace its value.
  if (const Entry* e = find_entry(layout, with(section, name))) {
    out.replace(e->value_begin, e->value_end - e->value_begin, lit);
    return out;
  }
  const std::string assignment = name + " = " + lit;

  // 2. The section, or a table above it, is an inline table (`run = { ... }`,
  //    `strategy = { name = "..." }`) or, wrongly, a plain value: the key goes inside it.
  for (size_t depth = section.size(); depth >= 1; --depth) {
    const Path outer(section.begin(), section.begin() + (std::ptrdiff_t)depth);
    const Entry* t = find_entry(layout, outer);
    if (!t) continue;
    const int line = line_at(text, t->key_begin);
    if (t->value_begin >= text.size() || text[t->value_begin] != '{' || t->value_end == 0 ||
        text[t->value_end - 1] != '}')
      throw std::invalid_argument("config key `" + key + "`: line " + std::to_string(line) +
                                  " sets `" + joined(outer) + "` to a value, not a section; fix it in the text");
    const std::string inner = depth < section.size() ? joined(section, depth) + "." + assignment : assignment;
    size_t close = t->value_end - 1;
    size_t last = close;
    while (last > t->value_begin + 1 && (text[last - 1] == ' ' || text[last - 1] == '\t')) --last;
    if (last == t->value_begin + 1) out.replace(last, close - last, " " + inner + " ");
    else out.insert(last, ", " + inner);
    return out;
  }

  // 3. A [section] header: after its last key (or right after the header).
  auto insert_line_after = [&](size_t line_end, const std::string& indent, const std::string& line) {
    std::string ins = indent + line + eol;
    if (line_end == text.size() && !text.empty() && text.back() != '\n') ins = eol + ins;
    out.insert(line_end, ins);
    return out;
  };
  for (size_t h = 0; h < layout.headers.size(); ++h) {
    const Header& header = layout.headers[h];
    if (header.array || header.path != section) continue;
    const Entry* last = nullptr;
    for (const auto& e : layout.entries)
      if (e.owner == (int)h) last = &e;
    if (!last) return insert_line_after(header.line_end, "", assignment);
    const std::string indent(text.substr(last->line_begin, last->key_begin - last->line_begin));
    return insert_line_after(last->line_end, indent, assignment);
  }

  // 4. Dotted keys of the section (`run.name = ...` at the top level, `data_centric.credits =
  //    ...` under [strategy]): one more of them, written the same way.
  const Entry* dotted = nullptr;
  size_t dotted_from = 0;  // path parts its header already gives
  for (const auto& e : layout.entries) {
    if (e.owner < -1 || e.path.size() != section.size() + 1 ||
        !std::equal(section.begin(), section.end(), e.path.begin()))
      continue;
    const size_t given = e.owner == -1 ? 0 : layout.headers[size_t(e.owner)].path.size();
    if (e.owner >= 0 && layout.headers[size_t(e.owner)].array) continue;
    if (given < section.size()) dotted = &e, dotted_from = given;
  }
  if (dotted) {
    const std::string indent(text.substr(dotted->line_begin, dotted->key_begin - dotted->line_begin));
    return insert_line_after(dotted->line_end, indent, joined(section, dotted_from) + "." + assignment);
  }

  // 5. A new section at the end, after a blank line.
  if (!text.empty()) {
    if (text.back() != '\n') out += eol;
    const bool blank_before = out.size() >= 2 * eol.size() &&
                              out.compare(out.size() - 2 * eol.size(), 2 * eol.size(), eol + eol) == 0;
    if (!blank_before) out += eol;
  }
  out += "[" + joined(section) + "]" + eol + assignment + eol;
  return out;
}

std::string config_value_literal(const std::string& key, std::string_view user_text) {
  const ConfigKeyInfo& info = key_info(key);
  if (info.type == "string" || info.type == "path") return toml_string_literal(user_text);
  std::string lit = trim(user_text);
  if (info.type == "boolean") {
    std::string lower = lit;
    for (auto& ch : lower) ch = (char)std::tolower((unsigned char)ch);
    if (lower == "true" || lower == "false") lit = lower;
  } else if (info.type == "integer array" || info.type == "float array") {
    if (lit.empty() || lit.front() != '[') lit = "[" + lit + "]";
  } else if (info.type == "string array") {
    if (lit.empty() || lit.front() != '[') {  // "a, b" -> ["a", "b"]
      std::string items;
      size_t at = 0;
      while (at <= lit.size()) {
        const size_t comma = std::min(lit.find(',', at), lit.size());
        const std::string item = trim(lit.substr(at, comma - at));
        if (!item.empty()) items += (items.empty() ? "" : ", ") + toml_string_literal(item);
        at = comma + 1;
      }
      lit = "[" + items + "]";
    }
  } else if (info.type == "auto or number") {  // a word ("auto") is a string, a number stays one
    if (!config_detail::auto_or_number_value(lit)) return toml_string_literal(lit);
  } else if (info.type == "integer or integer array") {
    if (!lit.empty() && lit.front() != '[' && lit.find(',') != std::string::npos) lit = "[" + lit + "]";
  }
  return checked_literal(key, lit);
}

std::string config_literal_display(std::string_view literal) {
  if (limit_problem("v = " + std::string(literal))) return std::string(literal);
  try {
    const toml::table t = toml::parse("v = " + std::string(literal));
    const toml::node* v = t.get("v");
    if (!v) return std::string(literal);
    if (auto s = v->as_string()) return s->get();
    if (auto a = v->as_array()) {
      std::string out = "[";
      for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& e = *a->get(i);
        if (i) out += ", ";
        if (auto n = e.as_integer()) out += std::to_string(n->get());
        else if (auto b = e.as_boolean()) out += b->get() ? "true" : "false";
        else if (auto d = e.as_floating_point()) {
          char buf[64];
          const auto r = std::to_chars(buf, buf + sizeof buf, d->get());
          out.append(buf, r.ptr);
        } else {
          return std::string(literal);
        }
      }
      return out + "]";
    }
  } catch (const toml::parse_error&) {
  }
  return std::string(literal);
}

std::string toml_syntax_error(std::string_view text) {
  if (auto problem = limit_problem(text)) return *problem;
  try {
    (void)toml::parse(text);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return "line " + std::to_string(b.line) + ", column " + std::to_string(b.column) + ": " +
           std::string(e.description());
  }
  return {};
}

}  // namespace moebench

// Reading configs: TOML text -> Config, then --set overrides, then validate() (config_validate.cpp).
// Every problem becomes a ConfigIssue; all of them are thrown together as one ConfigError.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <toml++/toml.h>

#include "config_detail.h"
#include "config_reader.h"
#include "moebench/config/file_kind.h"
#include "moebench/config/strategy_spec.h"
#include "toml_precheck.h"

namespace moebench {

std::string ConfigIssue::to_string() const {
  std::string s;
  if (file == kOverrideSource) {
    s = file + " " + key + ": ";
  } else {
    if (!file.empty()) s = file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": ";
    if (!key.empty()) s += key + ": ";
  }
  return s + message;
}

namespace {
std::string join_issues(const std::vector<ConfigIssue>& issues) {
  std::string s;
  for (const auto& i : issues) {
    if (!s.empty()) s += '\n';
    s += i.to_string();
  }
  return s;
}
}  // namespace

ConfigError::ConfigError(std::vector<ConfigIssue> issues)
    : std::runtime_error(join_issues(issues)), issues_(std::move(issues)) {}

namespace config_detail {

std::string excerpt(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "... (" + std::to_string(s.size()) + " bytes)";
}

void LoadState::fail(const std::string& key, const std::string& message, const std::string& fallback) {
  auto it = origins.find(key);
  if (it == origins.end() && !fallback.empty()) it = origins.find(fallback);
  if (it == origins.end()) add({source_name, 0, key, message});
  else add({it->second.file, it->second.line, key, message});
}

void LoadState::add(ConfigIssue issue) {
  if (full()) ++dropped;
  else issues.push_back(std::move(issue));
}

}  // namespace config_detail

namespace {

using namespace config_detail;
namespace fs = std::filesystem;

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::array: return "array";
    case toml::node_type::table: return "table";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

// "string \"abc\"", "float 128.0", "array" ...
std::string describe(const toml::node& n) {
  std::string s = type_name(n);
  if (auto v = n.as_string()) s += " \"" + excerpt(v->get()) + "\"";
  else if (auto i = n.as_integer()) s += " " + std::to_string(i->get());
  else if (auto d = n.as_floating_point()) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d->get());
    std::string t(buf, res.ptr);
    if (t.find_first_of(".en") == std::string::npos) t += ".0";
    s += " " + t;
  } else if (auto b = n.as_boolean()) s += b->get() ? " true" : " false";
  return s;
}

int line_of(const toml::node& n) { return (int)n.source().begin.line; }

// Reads one value into its field. `at` is where the value came from (its line for file values,
// "--set" for overrides); `base_dir` resolves relative paths.
class Reader {
 public:
  Reader(Config& c, LoadState& st) : c_(c), st_(st) {}

  void read(const FieldDef& f, const toml::node& n, const Origin& at, const fs::path& base_dir) {
    const std::string key = f.name();
    at_ = at;
    key_ = key;
    if (assign(f, n, base_dir)) {
      st_.origins[key] = at;
      st_.bad.erase(key);
    } else {
      st_.bad.insert(key);
    }
  }

 private:
  bool error(const std::string& message, int line = -1) {
    st_.add({at_.file, at_.file == kOverrideSource ? 0 : (line >= 0 ? line : at_.line), key_, message});
    return false;
  }

  bool read_int(const toml::node& n, int& out, const char* what = "an integer") {
    if (auto d = n.as_floating_point()) {
      std::string msg = std::string("expected ") + what + ", got " + describe(n);
      const double v = d->get();
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
        msg += " (write " + std::to_string((long long)v) + " without the fraction)";
      return error(msg, line_of(n));
    }
    auto i = n.as_integer();
    if (!i) return error(std::string("expected ") + what + ", got " + describe(n), line_of(n));
    const int64_t v = i->get();
    if (v < INT_MIN || v > INT_MAX)
      return error("out of range for a 32-bit integer, got " + std::to_string(v), line_of(n));
    out = (int)v;
    return true;
  }

  bool read_double(const toml::node& n, double& out) {
    if (auto d = n.as_floating_point()) out = d->get();
    else if (auto i = n.as_integer()) out = (double)i->get();
    else return error("expected a number, got " + describe(n), line_of(n));
    if (!std::isfinite(out)) return error("must be a finite number, got " + describe(n), line_of(n));
    return true;
  }

  bool assign(const FieldDef& f, const toml::node& n, const fs::path& base_dir) {
    switch (f.kind) {
      case Kind::Int: {
        int v = 0;
        if (!read_int(n, v)) return false;
        f.get<int>(c_) = v;
        return true;
      }
      case Kind::Int64:
      case Kind::UInt64: {
        auto i = n.as_integer();
        if (!i) return error("expected an integer, got " + describe(n));
        if (f.kind == Kind::UInt64) {
          if (i->get() < 0) return error("must be >= 0, got " + std::to_string(i->get()));
          f.get<uint64_t>(c_) = (uint64_t)i->get();
        } else {
          f.get<int64_t>(c_) = i->get();
        }
        return true;
      }
      case Kind::Float: {
        double v = 0;
        if (auto d = n.as_floating_point()) v = d->get();
        else if (auto i = n.as_integer()) v = (double)i->get();
        else return error("expected a number, got " + describe(n));
        if (!std::isfinite(v)) return error("must be a finite number, got " + describe(n));
        if (std::fabs(v) > 3.4e38) return error("out of range for a 32-bit float, got " + describe(n));
        f.get<float>(c_) = (float)v;
        return true;
      }
      case Kind::Double: {
        double v = 0;
        if (!read_double(n, v)) return false;
        f.get<double>(c_) = v;
        return true;
      }
      case Kind::StringList: {
        auto a = n.as_array();
        if (!a) return error("expected an array of strings, got " + describe(n));
        std::vector<std::string> out;
        for (size_t i = 0; i < a->size(); ++i) {
          const toml::node& e = *a->get(i);
          auto s = e.as_string();
          if (!s)
            return error("expected an array of strings, element " + std::to_string(i) + " is " + describe(e),
                         line_of(e));
          out.push_back(s->get());
        }
        f.get<std::vector<std::string>>(c_) = std::move(out);
        return true;
      }
      case Kind::DoubleList: {
        auto a = n.as_array();
        if (!a) return error("expected an array of numbers, got " + describe(n));
        std::vector<double> out;
        for (size_t i = 0; i < a->size(); ++i) {
          const toml::node& e = *a->get(i);
          if (!e.is_number())
            return error("expected an array of numbers, element " + std::to_string(i) + " is " + describe(e),
                         line_of(e));
          double v = 0;
          if (!read_double(e, v)) return false;
          out.push_back(v);
        }
        f.get<std::vector<double>>(c_) = std::move(out);
        return true;
      }
      case Kind::Bool: {
        auto b = n.as_boolean();
        if (!b) return error("expected a boolean (true or false), got " + describe(n));
        f.get<bool>(c_) = b->get();
        return true;
      }
      case Kind::String:
      case Kind::Path: {
        auto s = n.as_string();
        if (!s) return error("expected a string, got " + describe(n));
        std::string v = s->get();
        if (f.kind == Kind::Path && !v.empty()) {
          fs::path p(v);
          if (p.is_relative()) p = fs::absolute(base_dir / p);
          v = p.lexically_normal().string();
        }
        f.get<std::string>(c_) = v;
        return true;
      }
      case Kind::Choice: {
        auto s = n.as_string();
        if (!s) return error("expected a string, got " + describe(n));
        const std::string problem = f.parse(f.ref(c_), s->get());
        return problem.empty() || error(problem);
      }
      case Kind::AutoOrNumber: {  // a string ("auto") or a number, kept as text ("50")
        if (auto str = n.as_string()) {
          f.get<std::string>(c_) = str->get();
          return true;
        }
        double v = 0;
        if (!n.is_number()) return error("expected \"auto\" or a number, got " + describe(n));
        if (!read_double(n, v)) return false;
        char buf[64];
        const auto res = std::to_chars(buf, buf + sizeof buf, v);
        f.get<std::string>(c_) = std::string(buf, res.ptr);
        return true;
      }
      case Kind::IntList:
      case Kind::Experts: {
        if (f.kind == Kind::Experts && !n.is_array()) {
          int v = 0;
          if (!read_int(n, v, "an integer or an array of integers")) return false;
          st_.experts_scalar = true;
          st_.experts_value = v;
          return true;
        }
        auto a = n.as_array();
        if (!a) return error("expected an array of integers, got " + describe(n));
        std::vector<int> out;
        for (size_t i = 0; i < a->size(); ++i) {
          const toml::node& e = *a->get(i);
          if (!e.is_integer())
            return error("expected an array of integers, element " + std::to_string(i) + " is " +
                         describe(e), line_of(e));
          int v = 0;
          if (!read_int(e, v)) return false;
          out.push_back(v);
        }
        if (f.kind == Kind::Experts) st_.experts_scalar = false;
        f.get<std::vector<int>>(c_) = std::move(out);
        return true;
      }
    }
    return false;
  }

  Config& c_;
  LoadState& st_;
  Origin at_;
  std::string key_;
};

// " did you mean `x`?" for the closest candidate within edit distance 3, else "".
std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
  int best = 4;
  std::string pick;
  for (const auto& c : candidates) {
    const int d = edit_distance(word, c, best - 1);
    if (d < best && d < (int)std::max(word.size(), c.size())) {
      best = d;
      pick = c;
    }
  }
  return pick.empty() ? "" : "; did you mean `" + pick + "`?";
}

std::vector<std::string> keys_of(std::string_view section) {
  std::vector<std::string> v;
  for (const auto& f : fields())
    if (section == f.section) v.push_back(f.key);
  return v;
}

// `section.key` of a key that exists in another section under exactly this name.
std::string qualified_elsewhere(std::string_view key, std::string_view not_section = {}) {
  for (const auto& f : fields())
    if (key == f.key && not_section != f.section) return f.name();
  return {};
}

// [strategy.<name>] of a strategy that reads no options (ppmoe): the message, else "". Said
// plainly, since "unknown key" would suggest a typo in a name that is right.
std::string optionless_strategy_message(const std::string& name) {
  const auto& names = strategy_names();
  const auto& sections = section_names();
  if (std::find(names.begin(), names.end(), name) == names.end() ||
      std::find(sections.begin(), sections.end(), "strategy." + name) != sections.end())
    return {};
  return "strategy \"" + name + "\" has no options ([strategy." + name + "] is not a section)";
}

// Unknown key `key` in `section` (known section): the message with a suggestion, as a key of
// the section or (`qualified`, for --set) as section.key.
std::string unknown_key_message(const std::string& section, const std::string& key, bool qualified = false) {
  std::string msg = "unknown key in [" + section + "]";
  if (section == "strategy")
    if (std::string optionless = optionless_strategy_message(key); !optionless.empty()) return optionless;
  // Keys that moved into their strategy's own section (moebench before the task-graph runtime).
  static const std::map<std::string, std::string> moved = {
      {"strategy.credits", "strategy.data_centric.credits"},
      {"strategy.priority", "strategy.data_centric.priority"},
      {"strategy.prefetch", "strategy.data_centric.prefetch"},
      {"strategy.hierarchical", "strategy.data_centric.hierarchical"},
      {"strategy.pcie_pairing", "strategy.data_centric.pcie_pairing"},
      {"strategy.janus_threshold", "strategy.janus.threshold"},
  };
  if (const auto m = moved.find(section + "." + key); m != moved.end()) {
    const auto dot = m->second.rfind('.');
    return "`" + m->first + "` moved: set `" + m->second.substr(dot + 1) + "` in [" + m->second.substr(0, dot) +
           "] (--set " + m->second + "=...)";
  }
  const std::string elsewhere = qualified_elsewhere(key, section);
  if (!elsewhere.empty()) return msg + "; did you mean `" + elsewhere + "`?";
  std::vector<std::string> names = keys_of(section);
  if (qualified)
    for (auto& n : names) n = section + "." + n;
  std::string s = suggest(qualified ? section + "." + key : key, names);
  if (s.empty()) {
    std::vector<std::string> all;
    for (const auto& f : fields()) all.push_back(f.name());
    s = suggest(section + "." + key, all);
  }
  return msg + s;
}

// The keys of section `name` (known); a subtable that is a known section of its own
// ([strategy.data_centric] inside [strategy]) is read the same way.
void read_section(const std::string& name, const toml::table& table, Reader& reader, LoadState& st,
                  const fs::path& base_dir) {
  for (auto&& [kk, value] : table) {
    const std::string key(kk.str());
    const FieldDef* f = find_field(name, key);
    if (!f) {
      const std::string sub = name + "." + key;
      if (value.is_table() &&
          std::find(section_names().begin(), section_names().end(), sub) != section_names().end()) {
        read_section(sub, *value.as_table(), reader, st, base_dir);
        continue;
      }
      st.add({st.source_name, (int)kk.source().begin.line, name + "." + key,
              st.full() ? std::string() : unknown_key_message(name, key)});  // (dropped when full)
      continue;
    }
    int line = line_of(value);
    if (line <= 0) line = (int)kk.source().begin.line;
    reader.read(*f, value, Origin{st.source_name, line}, base_dir);
  }
}

void read_file_tables(const toml::table& root, Config& c, LoadState& st, const fs::path& base_dir) {
  Reader reader(c, st);
  for (auto&& [k, node] : root) {
    const std::string name(k.str());
    const int key_line = (int)k.source().begin.line;
    const bool known = std::find(section_names().begin(), section_names().end(), name) !=
                       section_names().end();
    if (!node.is_table()) {
      std::string msg = "top-level key outside any section (keys belong in [run] [model] [moe] [data] [train])";
      const std::string elsewhere = qualified_elsewhere(name);
      if (!elsewhere.empty()) msg += "; did you mean `" + elsewhere + "`?";
      else if (known) msg = "expected a section (table), got " + describe(node);
      st.add({st.source_name, key_line, name, msg});
      continue;
    }
    if (!known) {
      std::vector<std::string> secs = section_names();
      std::string msg = "unknown section [" + name + "] (known: [run] [model] [moe] [data] [train])";
      const std::string s = suggest(name, secs);
      if (!s.empty()) msg = "unknown section [" + name + "]" + s;
      st.add({st.source_name, key_line, name, msg});
      continue;
    }
    read_section(name, *node.as_table(), reader, st, base_dir);
  }
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

void apply_overrides(const std::vector<std::string>& overrides, Config& c, LoadState& st) {
  Reader reader(c, st);
  const fs::path cwd = fs::current_path();
  for (const auto& text : overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos) {
      st.add({kOverrideSource, 0, excerpt(trim(text)), "expected key=value (e.g. --set moe.top_k=1)"});
      continue;
    }
    const std::string key = trim(std::string_view(text).substr(0, eq));
    const std::string raw = trim(std::string_view(text).substr(eq + 1));
    if (key.size() > kMaxKeyBytes) {
      st.add({kOverrideSource, 0, excerpt(key),
              "the key is " + std::to_string(key.size()) + " bytes long; the limit is " +
                  std::to_string(kMaxKeyBytes) + " bytes"});
      continue;
    }
    const auto dot = key.rfind('.');  // strategy.data_centric.credits: section strategy.data_centric
    const FieldDef* f =
        dot == std::string::npos ? nullptr : find_field(key.substr(0, dot), key.substr(dot + 1));
    if (!f) {
      std::string msg = "unknown key";
      if (key.empty()) msg = "expected key=value, the key is empty";
      else if (dot == std::string::npos) {
        const std::string elsewhere = qualified_elsewhere(key);
        msg += elsewhere.empty() ? "; keys are section.key (e.g. moe.top_k)"
                                 : "; did you mean `" + elsewhere + "`?";
      } else {
        const std::string section = key.substr(0, dot);
        if (section.starts_with("strategy.") && !optionless_strategy_message(section.substr(9)).empty())
          msg = optionless_strategy_message(section.substr(9));
        else if (std::find(section_names().begin(), section_names().end(), section) ==
                 section_names().end())
          msg = "unknown section [" + section + "]" + suggest(section, section_names());
        else
          msg = unknown_key_message(section, key.substr(dot + 1), /*qualified=*/true);
      }
      st.add({kOverrideSource, 0, key, msg});
      continue;
    }
    // A TOML value, else the bare text as a string.
    if (const auto too_big = size_limit_message(raw.size(), "the value")) {
      st.add({kOverrideSource, 0, key, *too_big});
      continue;
    }
    if (const size_t bad = invalid_utf8_at(raw); bad != std::string_view::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", (unsigned char)raw[bad]);
      st.add({kOverrideSource, 0, key, "the value is not valid UTF-8 (byte " + std::string(byte) + " at offset " +
                                           std::to_string(bad) + ")"});
      continue;
    }
    const std::string value_text = "v = " + raw;
    const auto precheck = precheck_toml(value_text);
    if (precheck && !precheck->syntax) {
      st.add({kOverrideSource, 0, key, "the value: " + precheck->message});
      continue;
    }
    toml::table parsed;
    bool is_value = false;
    if (!precheck) {  // (a syntax error found by the precheck: not a TOML value, a bare word)
      try {
        parsed = toml::parse(value_text);
        is_value = parsed.size() == 1 && parsed.contains("v");
      } catch (const toml::parse_error&) {
        is_value = false;
      }
    }
    const bool string_kind = f->kind == Kind::String || f->kind == Kind::Path || f->kind == Kind::Choice;
    if (is_value && !(string_kind && !parsed["v"].is_string())) {
      reader.read(*f, *parsed["v"].node(), Origin{kOverrideSource, 0}, cwd);
    } else {
      const toml::value<std::string> bare(raw);
      reader.read(*f, bare, Origin{kOverrideSource, 0}, cwd);
    }
  }
}

void sort_issues(std::vector<ConfigIssue>& issues, const std::string& source) {
  // The config file's issues by line, then the cluster file's by line, then those without a
  // line (a default value), then --set issues.
  std::stable_sort(issues.begin(), issues.end(), [&source](const ConfigIssue& a, const ConfigIssue& b) {
    auto rank = [&source](const ConfigIssue& i) {
      const bool set = i.file == kOverrideSource;
      return std::make_pair(set ? 3 : (i.line > 0 ? (i.file == source ? 0 : 1) : 2), set ? 0 : i.line);
    };
    return rank(a) < rank(b);
  });
}

}  // namespace

namespace config_detail {

void read_field(Config& c, LoadState& st, const FieldDef& f, const toml::node& n, const Origin& at,
                const std::string& base_dir) {
  Reader(c, st).read(f, n, at, fs::path(base_dir.empty() ? "." : base_dir));
}

std::string unknown_key_text(const std::string& section, const std::string& key) {
  return unknown_key_message(section, key);
}

std::string describe_value(const toml::node& n) { return describe(n); }

}  // namespace config_detail

Config parse_config(std::string_view toml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides, const std::string& base_dir) {
  LoadState st;
  st.source_name = source_name;
  Config c;
  c.source_file = source_name;
  bool syntax_ok = false;
  if (const auto too_big = size_limit_message(toml_text.size(), "the config")) {
    st.add({source_name, 0, "", *too_big});
  } else if (const auto v = precheck_toml(toml_text)) {
    st.add({source_name, v->line, "", v->message + " (column " + std::to_string(v->column) + ")"});
  } else {
    try {
      const toml::table root = toml::parse(toml_text, source_name);
      read_file_tables(root, c, st, fs::path(base_dir.empty() ? "." : base_dir));
      syntax_ok = true;
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      st.add({source_name, (int)b.line, "",
              "TOML syntax error: " + std::string(e.description()) + " (column " + std::to_string(b.column) + ")"});
    }
  }
  apply_overrides(overrides, c, st);
  read_cluster_file(c, st);
  if (syntax_ok) validate(c, st);
  if (!st.issues.empty()) {
    sort_issues(st.issues, source_name);
    if (st.dropped > 0)
      st.issues.push_back({source_name, 0, "", "and " + std::to_string(st.dropped) + " more problems (only the first " +
                                                   std::to_string(kMaxReportedIssues) + " are listed)"});
    throw ConfigError(std::move(st.issues));
  }
  return c;
}


Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status))
    throw ConfigError({{path, 0, "", "config file not found"}});
  if (fs::is_directory(status))
    throw ConfigError({{path, 0, "", "cannot read the config file: it is a directory"}});
  // A FIFO without a writer would block the open for ever; a device never ends: only files.
  if (!fs::is_regular_file(status))
    throw ConfigError({{path, 0, "", std::string("cannot read the config file: it is ") + file_kind(status) +
                                         ", not a regular file (write the config into a file)"}});
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string why = errno ? std::strerror(errno) : "cannot open it";
    throw ConfigError({{path, 0, "", "cannot read the config file: " + why}});
  }
  // At most one byte more than the limit: a huge file (or an endless one, /dev/zero) is not read.
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), (std::streamsize)text.size());
  text.resize((size_t)in.gcount());
  if (text.size() > kMaxConfigBytes) {
    const uint64_t bytes = fs::is_regular_file(status) ? fs::file_size(path, ec) : 0;
    throw ConfigError({{path, 0, "", bytes > kMaxConfigBytes ? *size_limit_message(bytes, "the config file")
                                                             : "the config file is longer than the limit of " +
                                                                   std::to_string(kMaxConfigBytes) + " bytes (1 MiB)"}});
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  return parse_config(text, path, overrides, dir.string());
}

}  // namespace moebench

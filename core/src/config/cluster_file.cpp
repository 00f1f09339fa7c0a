// Cluster description files: reading one on its own (cluster_file.h) and into a config
// (read_cluster_file, called by parse_config after the config's own keys and --set).
#include "moebench/config/cluster_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "config_detail.h"
#include "config_reader.h"
#include "toml_precheck.h"

namespace moebench {
namespace config_detail {
namespace {

namespace fs = std::filesystem;

// The text of the file at `path`, or why it cannot be read (as a message).
std::optional<std::string> read_limited(const std::string& path, std::string& why) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) {
    why = "cluster file not found: " + path;
    return std::nullopt;
  }
  if (!fs::is_regular_file(status)) {
    why = "cannot read the cluster file: not a regular file: " + path;
    return std::nullopt;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot read the cluster file " + path + ": " + (errno ? std::strerror(errno) : "cannot open it");
    return std::nullopt;
  }
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), (std::streamsize)text.size());
  text.resize((size_t)in.gcount());
  if (text.size() > kMaxConfigBytes) {
    why = *size_limit_message(text.size(), "the cluster file " + path);
    return std::nullopt;
  }
  return text;
}

// Reads the [cluster] keys of a cluster file's text into c.cluster. Keys the config already set
// (st.origins) are read into a scratch config: checked, then dropped (the config overrides them).
void read_cluster_text(std::string_view text, const std::string& source, Config& c, LoadState& st) {
  if (const auto v = precheck_toml(text)) {
    st.add({source, v->line, "", v->message + " (column " + std::to_string(v->column) + ")"});
    return;
  }
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    st.add({source, (int)b.line, "",
            "TOML syntax error: " + std::string(e.description()) + " (column " + std::to_string(b.column) + ")"});
    return;
  }
  Config scratch;
  LoadState scratch_st;
  scratch_st.source_name = source;
  for (auto&& [k, node] : root) {
    const std::string name(k.str());
    const int key_line = (int)k.source().begin.line;
    if (name != "cluster" || !node.is_table()) {
      std::string got = "a top-level key";
      if (node.is_table()) got = std::string("[").append(excerpt(name)).append("]");
      st.add({source, key_line, excerpt(name), "a cluster file holds only a [cluster] section (got " + got + ")"});
      continue;
    }
    for (auto&& [kk, value] : *node.as_table()) {
      const std::string key(kk.str());
      int line = (int)value.source().begin.line;
      if (line <= 0) line = (int)kk.source().begin.line;
      const FieldDef* f = find_field("cluster", key);
      if (!f) {
        st.add({source, (int)kk.source().begin.line, "cluster." + excerpt(key),
                st.full() ? std::string() : unknown_key_text("cluster", key)});
        continue;
      }
      if (key == "file") {
        st.add({source, line, "cluster.file", "a cluster file cannot name another cluster file"});
        continue;
      }
      const std::string base = fs::path(source).parent_path().string();
      if (st.is_set(f->name())) {
        read_field(scratch, scratch_st, *f, value, Origin{source, line}, base);
        for (auto& issue : scratch_st.issues) st.add(std::move(issue));
        scratch_st.issues.clear();
      } else {
        read_field(c, st, *f, value, Origin{source, line}, base);
      }
    }
  }
}

}  // namespace

void read_cluster_file(Config& c, LoadState& st) {
  const std::string key = "cluster.file";
  if (!st.is_set(key) || st.bad.count(key) || c.cluster.file.empty()) return;
  std::string why;
  const auto text = read_limited(c.cluster.file, why);
  if (!text) {
    st.fail(key, why);
    st.bad.insert(key);
    return;
  }
  read_cluster_text(*text, c.cluster.file, c, st);
}

}  // namespace config_detail

using namespace config_detail;

ClusterConfig parse_cluster_file(std::string_view toml_text, const std::string& source_name) {
  LoadState st;
  st.source_name = source_name;
  Config c;
  if (const auto too_big = size_limit_message(toml_text.size(), "the cluster file"))
    st.add({source_name, 0, "", *too_big});
  else
    read_cluster_text(toml_text, source_name, c, st);
  if (st.issues.empty()) validate_cluster(c, st);
  if (!st.issues.empty()) throw ConfigError(std::move(st.issues));
  return c.cluster;
}

std::vector<std::string> missing_cluster_links(const std::string& path, const ClusterConfig& c) {
  std::string why;
  const auto text = read_limited(path, why);
  if (!text || precheck_toml(*text)) return {};
  toml::table t;
  try {
    t = toml::parse(*text, path);
  } catch (const toml::parse_error&) {
    return {};
  }
  std::vector<std::string> missing;
  auto need = [&](const char* key, bool used) {
    if (used && !t["cluster"][key]) missing.push_back(std::string("cluster.") + key);
  };
  need("device_tflops", true);
  need("intra_bw_gbs", c.devices_per_node != 1);
  need("inter_bw_gbs", c.nodes > 1);
  return missing;
}

ClusterConfig load_cluster_file(const std::string& path) {
  std::string why;
  const auto text = read_limited(path, why);
  if (!text) throw ConfigError({{path, 0, "", why}});
  return parse_cluster_file(*text, path);
}

}  // namespace moebench

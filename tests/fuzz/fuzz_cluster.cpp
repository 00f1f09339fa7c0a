// Fuzz target: cluster description files (cluster_file.h) and the ClusterModel built from them.
// Input: the text of a cluster file.
// Checks: parse_cluster_file() either returns a ClusterConfig or throws ConfigError with at least
// one issue (any other exception or a crash is a finding). An accepted file builds a
// ClusterModel without an exception (validation and model agree), whose link classes are
// symmetric, whose times are >= 0 and never NaN, and whose describe() names the cluster.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "moebench/config/cluster_file.h"
#include "moebench/perf/cluster_model.h"

namespace {

void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_cluster: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void check_time(double t, const char* what) {
  if (std::isnan(t) || t < 0) fail("negative or NaN time", what);
}

void check_model(const moebench::ClusterConfig& k, size_t size) {
  // devices_per_node = 0 means "world / nodes": pick a node size the file's other keys allow.
  int per_node = k.devices_per_node;
  if (per_node == 0) {
    per_node = 1;
    for (int r : k.pcie_switch_pairs) per_node = std::max(per_node, r + 1);
    if (k.devices_per_nic > 0) per_node = (per_node + k.devices_per_nic - 1) / k.devices_per_nic * k.devices_per_nic;
  }
  if ((long long)k.nodes * per_node > INT_MAX) return;
  const int world = k.nodes * per_node;
  moebench::ClusterConfig resolved = k;
  resolved.devices_per_node = per_node;
  try {
    const moebench::ClusterModel m(moebench::cluster_spec(resolved, world));
    const int a = (int)(size % (size_t)world), b = world - 1 - a;
    const int pairs[][2] = {{0, world - 1}, {a, b}, {a, a}, {0, std::min(1, world - 1)}};
    for (const auto& p : pairs) {
      if (m.link_class(p[0], p[1]) != m.link_class(p[1], p[0])) fail("asymmetric link class", m.describe());
      check_time(m.transfer_seconds(p[0], p[1], (double)size), "transfer_seconds");
    }
    check_time(m.compute_seconds(1e3 * (double)size), "compute_seconds");
    check_time(m.copy_seconds((double)size), "copy_seconds");
    if (m.describe().rfind(k.name, 0) != 0) fail("describe() does not start with the name", m.describe());
  } catch (const std::exception& e) {
    fail("a validated cluster file does not build a ClusterModel", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  moebench::ClusterConfig k;
  try {
    k = moebench::parse_cluster_file(text, "fuzz_cluster.toml");
  } catch (const moebench::ConfigError& e) {
    if (e.issues().empty()) fail("ConfigError without issues", text);
    return 0;
  } catch (const std::exception& e) {
    fail("unexpected exception", e.what());
  }
  check_model(k, size);
  return 0;
}

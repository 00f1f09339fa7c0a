// Rank failure reports of a local launch (launch_report.h).
#include "moebench/dist/launch_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace moebench {

std::string launch_dir_from_env() {
  const char* dir = std::getenv(kLaunchDirEnv);
  return dir && *dir ? dir : "";
}

void write_rank_failure(const std::string& dir, const RankFailure& f) {
  // "<exit code> <time>\n<message>"; written under a temporary name and renamed, so the
  // launcher never reads half a report.
  const std::string name = dir + "/rank_" + std::to_string(f.rank) + ".failed";
  const std::string tmp = name + ".tmp";
  if (FILE* out = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(out, "%d %.6f\n%s", f.exit_code, f.time, f.message.c_str());
    const bool ok = std::fclose(out) == 0;
    if (ok) std::rename(tmp.c_str(), name.c_str());
    else std::remove(tmp.c_str());
  }
}

std::vector<RankFailure> read_rank_failures(const std::string& dir) {
  std::vector<RankFailure> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int rank = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "rank_%d.faile%c", &rank, &tail) != 2 || tail != 'd' ||
        name != "rank_" + std::to_string(rank) + ".failed")
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    RankFailure f;
    f.rank = rank;
    std::string head;
    if (!std::getline(in, head)) continue;
    std::istringstream fields(head);
    if (!(fields >> f.exit_code >> f.time)) continue;
    std::ostringstream rest;
    rest << in.rdbuf();
    f.message = rest.str();
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const RankFailure& a, const RankFailure& b) {
    return a.time != b.time ? a.time < b.time : a.rank < b.rank;
  });
  return out;
}

std::vector<std::string> describe_rank_failures(const std::vector<RankFailure>& failures, int world) {
  std::vector<std::string> lines;
  std::vector<bool> told(failures.size(), false);
  for (size_t i = 0; i < failures.size(); ++i) {
    if (told[i]) continue;
    std::vector<int> same;
    for (size_t j = i + 1; j < failures.size(); ++j)
      if (!told[j] && failures[j].message == failures[i].message) {
        told[j] = true;
        same.push_back(failures[j].rank);
      }
    std::sort(same.begin(), same.end());
    std::string line = "rank " + std::to_string(failures[i].rank) + " of " + std::to_string(world) +
                       " failed: " + failures[i].message;
    if (!same.empty()) {
      std::string list;
      for (int r : same) list += (list.empty() ? "" : ", ") + std::to_string(r);
      line += same.size() == 1 ? " (rank " + list + " failed the same way)"
                               : " (ranks " + list + " failed the same way)";
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace moebench

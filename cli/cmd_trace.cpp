// moebench trace RUN [--db PATH] [--steps A:B] -o trace.json: a run's recorded spans as a
// Chrome trace for https://ui.perfetto.dev or chrome://tracing (chrome_trace.h: one process
// per rank, one thread per stream, flows between peers, traffic counters; ranks' clocks are
// aligned on their first step of the range). --steps: "A:B" steps A..B inclusive, "A:" from
// A, ":B" up to B, "A" one step; steps are 1-based (step 1 is the first optimizer step, as `run`
// prints it); default all. "-o -" writes to stdout; a file is written whole or not at all, and an
// existing one only with --force (output_file.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

#include "commands.h"
#include "output_file.h"
#include "run_db.h"
#include "moebench/store/chrome_trace.h"

namespace moebench::cli {

namespace {

struct StepRange {
  int64_t first = 1, last = -1;  // 1-based; last -1 = to the end
};

// "" when `text` is a valid range (filling `out`), else what is wrong.
std::string parse_steps(const std::string& text, StepRange& out) {
  static const std::regex re(R"(^\s*(\d*)\s*(:?)\s*(\d*)\s*$)");
  std::smatch m;
  const std::string bad = "'" + text + "' is not a step range: expected A:B (steps A..B inclusive), A:, :B or A, "
                          "with A, B >= 1";
  if (!std::regex_match(text, m, re)) return bad;
  const bool colon = m[2].length() > 0;
  if (!colon && m[1].length() == 0) return bad;
  if (!colon && m[3].length() > 0) return bad;
  try {
    out.first = m[1].length() ? std::stoll(m[1].str()) : 1;
    out.last = colon ? (m[3].length() ? std::stoll(m[3].str()) : -1) : out.first;
  } catch (const std::exception&) {
    return bad;
  }
  if (out.first < 1 || out.last == 0) return "'" + text + "': steps are numbered from 1 (step 1 is the first step)";
  if (out.last >= 0 && out.last < out.first)
    return "'" + text + "': the last step is before the first";
  return "";
}

std::string range_text(const StepRange& r) {
  return std::to_string(r.first) + ".." + (r.last < 0 ? std::string("end") : std::to_string(r.last));
}

int write_trace(const std::string& db, const std::string& ref, const StepRange& range, const std::string& out_path) {
  auto store = open_run_db(db, RunStore::Mode::read_only);
  const RunInfo run = store->find_run(ref);
  const nlohmann::json trace = chrome_trace(*store, run, range.first, range.last);
  size_t spans = 0;
  std::set<int> ranks;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++spans;
      ranks.insert(e["pid"].get<int>());
    }
  }
  if (spans == 0)
    throw std::runtime_error("run " + std::to_string(run.id) + " (" + run.name + ") has no spans in steps " +
                             range_text(range) + " of " + db);
  const std::string text = trace.dump();
  if (out_path == "-") {
    std::cout << text << "\n";
  } else {  // whole or not at all: a temporary file renamed into place
    const std::string temp = out_path + "." + std::to_string(::getpid()) + ".tmp";
    std::ofstream f(temp, std::ios::binary | std::ios::trunc);
    f << text << "\n";
    f.close();
    std::error_code ec;
    if (f) std::filesystem::rename(temp, out_path, ec);
    if (!f || ec) {
      std::filesystem::remove(temp, ec);
      throw std::runtime_error("cannot write " + out_path);
    }
  }
  std::fprintf(stderr, "%s: %zu spans on %zu ranks, steps %s of run %lld (%s); open it in https://ui.perfetto.dev\n",
               out_path == "-" ? "stdout" : out_path.c_str(), spans, ranks.size(), range_text(range).c_str(),
               static_cast<long long>(run.id), run.name.c_str());
  return 0;
}

}  // namespace

void add_trace_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("trace", "Write a run's spans as a Chrome trace (Perfetto) JSON file");
  auto ref = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>(kDefaultRunDb);
  auto steps = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  cmd->add_option("run", *ref, "Run id, uuid (prefix) or name")->required();
  cmd->add_option("--db", *db, "Run database (default: runs.db in the current directory)");
  cmd->add_option("--steps", *steps, "Steps A:B (inclusive; step 1 is the first), A:, :B or A; default all")
      ->check(CLI::Validator(
          [](std::string& text) {
            StepRange r;
            return parse_steps(text, r);
          },
          "A:B"));
  cmd->add_option("-o,--output", *out, "Output file (- for stdout)")->required();
  cmd->add_flag("--force", *force, "Replace the output file if it exists");
  cmd->callback([&action, ref, db, steps, out, force] {
    action = [ref, db, steps, out, force] {
      if (*out != "-") check_output_file("trace -o", *out, *force);
      StepRange range;
      if (!steps->empty()) parse_steps(*steps, range);
      return with_run_db(*db, [&] { return write_trace(*db, *ref, range, *out); });
    };
  });
}

}  // namespace moebench::cli

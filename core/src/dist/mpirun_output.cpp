// Classifying Open MPI mpirun's stderr (mpirun_output.h).
#include "moebench/dist/mpirun_output.h"

#include <regex>

namespace moebench {
namespace {

bool is_rule(const std::string& line) {
  return line.size() >= 40 && line.find_first_not_of('-') == std::string::npos;
}

// "[host:01234] ..." lines mpirun adds about aggregated help messages, and its own error log
// lines ("[host:01234] [[11093,0],0] ORTE_ERROR_LOG: ...") when several ranks abort at once.
bool is_mpirun_note(const std::string& line) {
  static const std::regex re(
      R"(^\[[^\]]*:\d+\] (\d+ more process(es)? (has|have) sent help message|Set MCA parameter "orte_base_help_aggregate"|\[\[\d+,\d+\],\d+\] ORTE_ERROR_LOG: ).*)");
  return std::regex_match(line, re);
}

// Open MPI's signal handler in a process: "[host:01234] *** Process received signal ***",
// "[host:01234] Signal: Terminated (15)", "[host:01234] [ 3] /lib/...".
bool is_process_report(const std::string& line) {
  static const std::regex re(R"(^\[[^\]\s]*:\d+\] .*)");
  return std::regex_match(line, re);
}

// What a rank prints when the peer it reads from with CMA has died (with or without its
// "[host:pid] " prefix: the task-graph runtime's comm threads print it that way).
bool is_peer_loss_noise(const std::string& line) {
  static const std::regex re(R"(^(\[[^\]\s]*:\d+\] )?Read -?\d+, expected \d+, errno = \d+$)");
  return std::regex_match(line, re);
}

// libevent's warnings from the event loop of mpirun or a rank when a socket of a peer that is
// going away is closed under it: "[warn] Epoll MOD(1) on fd 26 failed. Old events were 6; read
// change was 0 (none); write change was 2 (del); close change was 0 (none): Bad file
// descriptor" (libevent's epoll backend; its log lines start "[warn] " or "[err] ").
bool is_libevent_noise(const std::string& line) {
  static const std::regex re(R"(^\[(warn|err)\] (Epoll|epoll_).*)");
  return std::regex_match(line, re);
}

// A number matched by \d+; -1 when it does not fit an int.
int to_int(const std::string& digits) {
  try {
    return std::stoi(digits);
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

std::vector<std::string> MpirunOutput::on_line(const std::string& line) {
  std::vector<std::string> show;
  if (in_banner_) {
    banner_.push_back(line);
    if (is_rule(line)) {
      in_banner_ = false;
      classify(banner_, show);
      banner_.clear();
    }
    return show;
  }
  if (is_rule(line)) {
    in_banner_ = true;
    banner_ = {line};
    return show;
  }
  if (is_mpirun_note(line) || is_peer_loss_noise(line) || is_libevent_noise(line) ||
      (stopping_ && is_process_report(line))) {
    held_.push_back(line);
    return show;
  }
  show.push_back(line);
  return show;
}

std::vector<std::string> MpirunOutput::finish() {
  std::vector<std::string> show;
  if (in_banner_) show = banner_;
  in_banner_ = false;
  banner_.clear();
  return show;
}

void MpirunOutput::classify(const std::vector<std::string>& banner, std::vector<std::string>& show) {
  std::string text;
  for (const auto& l : banner) text += l + "\n";
  static const std::regex died(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+) \(([^)]*)\))");
  static const std::regex exited(R"(Process name: \[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+))");
  std::smatch m;
  bool failure = false;
  if (std::regex_search(text, m, died)) {
    failure = true;
    if (!death_) death_ = RankDeath{to_int(m[1]), to_int(m[2]), m[3]};
  } else if (std::regex_search(text, m, exited)) {
    failure = true;
    if (!exit_) exit_ = RankExit{to_int(m[1]), to_int(m[2])};
  } else if (text.find("MPI_ABORT was invoked") != std::string::npos) {
    failure = aborted_ = true;
  } else if (text.find("returned\na non-zero exit code") != std::string::npos ||
             text.find("exiting improperly") != std::string::npos) {
    failure = true;
  }
  std::vector<std::string>& to = failure ? held_ : show;
  to.insert(to.end(), banner.begin(), banner.end());
}

}  // namespace moebench

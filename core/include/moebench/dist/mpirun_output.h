#pragma once
// Reading OpenMPI mpirun's stderr for the local launcher: the ranks' own lines pass through
// as they come; mpirun's help banners (blocks between lines of 74 dashes) about a failing job
// and the noise of ranks that lost a peer ("Read -1, expected 17152, errno = 14", libevent's
// "[warn] Epoll MOD(1) on fd 26 failed. ...: Bad file descriptor") are held back, and what
// they say is kept: the first rank that died by a signal, the first rank that exited non-zero. The launcher then prints one line of its own ("rank 2 of 4 died (signal 9,
// Killed)") and shows the held lines only when nothing else explains the failure. Banners
// that are not about a failure (warnings) pass through whole. Written against Open MPI 4.1's
// wording; with other wording lines simply pass through.
#include <optional>
#include <string>
#include <vector>

namespace moebench {

struct RankDeath {
  int rank = -1;
  int signal = 0;
  std::string signal_name;  // "Killed", "Segmentation fault"
};

struct RankExit {
  int rank = -1;
  int code = 0;
};

class MpirunOutput {
 public:
  // One line of mpirun's stderr, without its newline. Returns the lines to show now.
  std::vector<std::string> on_line(const std::string& line);
  // End of the stream: an unterminated banner is released (shown) whole.
  std::vector<std::string> finish();
  // The job is being stopped on purpose: from now on Open MPI's reports of processes torn
  // down mid-way ("[host:pid] *** Process received signal ***" and the backtrace lines under
  // it) are held too.
  void set_stopping() { stopping_ = true; }

  const std::optional<RankDeath>& death() const { return death_; }
  const std::optional<RankExit>& exit() const { return exit_; }
  bool aborted() const { return aborted_; }  // a rank called MPI_Abort
  const std::vector<std::string>& held() const { return held_; }

 private:
  void classify(const std::vector<std::string>& banner, std::vector<std::string>& show);

  bool in_banner_ = false;
  std::vector<std::string> banner_;
  std::vector<std::string> held_;
  std::optional<RankDeath> death_;
  std::optional<RankExit> exit_;
  bool aborted_ = false;
  bool stopping_ = false;
};

}  // namespace moebench

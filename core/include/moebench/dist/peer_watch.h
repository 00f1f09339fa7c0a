#pragma once
// A watch over the ranks of a job that spans several hosts: a side channel of plain TCP
// connections (every rank to rank 0) carrying a heartbeat a second, so that a rank that dies or
// a host that drops off is noticed by the survivors at once, and said once by moebench ("lost
// rank 2 on host h2 (...)"), instead of the job hanging in a collective or ending with only the
// launcher's banners. Why not MPI itself: Open MPI 4.1's ob1/tcp leaves a rank blocked in a
// receive from a dead peer (MPI_ERRORS_RETURN returns nothing), and mpirun then SIGTERMs the
// survivors (which moebench takes as a stop request) and SIGKILLs them a second later, so the
// run was left RUNNING in the store.
//
// Rank 0 listens on an ephemeral port of every local IPv4 address (restricted to
// OMPI_MCA_btl_tcp_if_include / OMPI_MCA_oob_tcp_if_include when set, as mpirun --mca passes
// them, so the watch uses the job's network); the others connect (127.0.0.1 on rank 0's host).
// A rank that leaves normally, or that reports a failure of its own first, says goodbye (leave());
// a connection that closes without one, or is silent for timeout_s, is a lost rank. Rank 0
// watches every rank; the others watch rank 0 (rank 1 says it, the rest 5 s later, by when the
// job has normally been ended). Nothing here is collective after the constructor.
//
// Failures travel to rank 0, which alone writes the run store of a job across hosts: SQLite's
// WAL mode is not safe from two hosts at once (a store on NFS, say). A rank that fails by
// itself sends its message to rank 0 (report_failure), rank 0 runs on_failure (marks the run
// FAILED) and acknowledges, and only then does the failing rank abort the job.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace moebench {

class Communicator;

struct PeerWatchOptions {
  double timeout_s = 10;   // silence that makes a peer lost; <= 0: only closed connections count
  double interval_s = 1;   // heartbeat period
};

// The options from MOEBENCH_PEER_TIMEOUT_S (seconds; 0 turns the silence rule off).
PeerWatchOptions peer_watch_options_from_env();

// Text for lost ranks: "rank 2 on host h2" / "ranks 2, 3 on host h2 and rank 5 on host h3".
std::string describe_lost_ranks(const std::vector<int>& ranks, const std::vector<std::string>& hosts);

class PeerWatch {
 public:
  // on_lost(message, on_rank0_host) runs on the watch's thread, once: message is "lost rank 2 on
  // host h2 (reason)"; on_rank0_host: whether this rank shares rank 0's host (may write the store). It normally ends the process (MPI_Abort); if it returns, the watch stops.
  // Collective over world (rank 0's port and addresses are broadcast). hosts: every rank's host
  // name (gather_hostnames). A rank that cannot reach rank 0 warns once and is not watched.
  // on_failure(rank, message) runs on rank 0's watch thread when another rank reports a failure
  // of its own (report_failure); the failing rank ends the job after rank 0 acknowledged.
  PeerWatch(Communicator& world, std::vector<std::string> hosts, PeerWatchOptions options,
            std::function<void(const std::string&, bool)> on_lost,
            std::function<void(int, const std::string&)> on_failure = {});
  ~PeerWatch();  // leave() and join
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Says goodbye to the peers (this rank's end is not a loss) and stops watching. Idempotent.
  void leave();
  // A rank other than 0: sends `message` (this rank's failure) to rank 0 and waits up to
  // timeout_s for rank 0 to have handled it, then leaves. True when rank 0 acknowledged.
  bool report_failure(const std::string& message, double timeout_s = 5);
  // Whether this rank runs on rank 0's host (there, the run store may be written directly).
  bool on_rank0_host() const { return hosts_.empty() || hosts_[(size_t)me_] == hosts_[0]; }

 private:
  void run_root();
  void run_peer();
  void lost(const std::vector<int>& ranks, bool closed);
  bool stop_thread();  // false when the watch was already leaving

  int me_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  PeerWatchOptions options_;
  std::function<void(const std::string&, bool)> on_lost_;
  std::function<void(int, const std::string&)> on_failure_;
  int listen_fd_ = -1;
  std::vector<int> fds_;      // rank 0: by rank (-1: not connected); others: [0] = rank 0
  int wake_[2] = {-1, -1};    // pipe: leave() wakes the thread
  std::atomic<bool> leaving_{false};
  std::thread thread_;
};

// A PeerWatch (options from the environment) when world's ranks run on more than one host, else
// null; collective (it gathers the host names). One host needs none: the local launcher, or
// mpirun on that host, sees its ranks die, and the store marks a vanished run on open.
std::unique_ptr<PeerWatch> watch_peers_across_hosts(Communicator& world,
                                                    std::function<void(const std::string&, bool)> on_lost,
                                                    std::function<void(int, const std::string&)> on_failure);

}  // namespace moebench

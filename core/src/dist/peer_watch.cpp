// PeerWatch: every rank's TCP connection to rank 0 with a heartbeat, so a rank that dies or a
// host that drops off is said once by moebench (dist/peer_watch.h).
#include "moebench/dist/peer_watch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"

namespace moebench {
namespace {

constexpr char kHeartbeat = 'H';
constexpr char kGoodbye = 'B';
constexpr char kFailure = 'F';  // then a uint32 length and the message (peer -> rank 0)
constexpr char kAck = 'A';      // rank 0 handled a failure (rank 0 -> peer)
constexpr size_t kAnnounceBytes = 1024;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "a.b.c.d/n" contains addr (host byte order)?
bool in_cidr(const std::string& cidr, uint32_t addr) {
  const size_t slash = cidr.find('/');
  in_addr net{};
  if (inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &net) != 1) return false;
  const int bits = slash == std::string::npos ? 32 : std::atoi(cidr.c_str() + slash + 1);
  const uint32_t mask = bits <= 0 ? 0 : bits >= 32 ? 0xffffffffu : ~((1u << (32 - bits)) - 1);
  return (ntohl(net.s_addr) & mask) == (addr & mask);
}

// Open MPI's TCP include list (comma-separated CIDRs or interface names), "" when none.
std::string tcp_include() {
  for (const char* name : {"OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return "";
}

// This host's IPv4 addresses that are up, not loopback, and allowed by the include list.
std::vector<std::string> local_addresses() {
  const std::string include = tcp_include();
  std::vector<std::string> items;
  std::stringstream ss(include);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) items.push_back(item);
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK))
      continue;
    const uint32_t addr = ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    bool ok = items.empty();
    for (const auto& item : items) ok = ok || item == a->ifa_name || (item.find('.') != std::string::npos && in_cidr(item, addr));
    if (!ok) continue;
    char text[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    out.emplace_back(text);
  }
  freeifaddrs(list);
  return out;
}

// Connects to addr:port within timeout_s; the socket or -1 (error in *why).
int connect_to(const std::string& addr, int port, double timeout_s, std::string* why) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) return *why = "bad address " + addr, -1;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return *why = std::strerror(errno), -1;
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = poll(&p, 1, (int)(timeout_s * 1000));
    int err = 0;
    socklen_t len = sizeof err;
    if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) rc = 0;
    else errno = rc == 0 ? ETIMEDOUT : err, rc = -1;
  }
  if (rc != 0) {
    *why = addr + ":" + std::to_string(port) + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void send_byte(int fd, char c) {
  if (fd >= 0) (void)send(fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// Reads what is there: false when the peer closed (or the connection broke); *got set when
// something came, *bye on a goodbye.
bool drain(int fd, bool* got, bool* bye) {
  char buf[256];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      *got = true;
      if (std::memchr(buf, kGoodbye, (size_t)n)) *bye = true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Reads what is there into `in`: false when the peer closed (or the connection broke); *got set
// when something came.
bool read_into(int fd, std::string& in, bool* got) {
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      *got = true;
      in.append(buf, (size_t)n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Takes the complete messages off the front of `in` (a peer's: heartbeats, a goodbye, a failure
// with its text): *bye on a goodbye, each failure's text appended to *failures.
void parse_peer_messages(std::string& in, bool* bye, std::vector<std::string>* failures) {
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] == kFailure) {
      uint32_t len = 0;
      if (in.size() - i < 1 + sizeof len) break;
      std::memcpy(&len, in.data() + i + 1, sizeof len);
      if (in.size() - i - 1 - sizeof len < len) break;
      failures->push_back(in.substr(i + 1 + sizeof len, len));
      i += 1 + sizeof len + len;
      continue;
    }
    if (in[i] == kGoodbye) *bye = true;
    ++i;
  }
  in.erase(0, i);
}

// The watch's thread takes no stop signals: they stay with the threads that act on them.
void block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Why ranks count as lost: their connections closed without a goodbye, or were silent too long.
std::string lost_reason(bool closed, bool many, double timeout_s) {
  if (closed)
    return many ? "their connections closed without a goodbye: the processes died or were killed"
                : "its connection closed without a goodbye: the process died or was killed";
  char buf[160];
  std::snprintf(buf, sizeof buf, "no heartbeat for %.0f s: %s", timeout_s,
                many ? "their host or the network to it is down" : "its host or the network to it is down");
  return buf;
}

}  // namespace

PeerWatchOptions peer_watch_options_from_env() {
  PeerWatchOptions o;
  if (const char* v = std::getenv("MOEBENCH_PEER_TIMEOUT_S"); v && *v) o.timeout_s = std::atof(v);
  return o;
}

std::string describe_lost_ranks(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> by_host;
  for (int r : ranks) {
    const std::string h = r >= 0 && r < (int)hosts.size() ? hosts[(size_t)r] : "?";
    if (!by_host.count(h)) order.push_back(h);
    by_host[h].push_back(r);
  }
  std::string s;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& rs = by_host[order[i]];
    if (i) s += " and ";
    s += rs.size() == 1 ? "rank " : "ranks ";
    for (size_t k = 0; k < rs.size(); ++k) s += (k ? ", " : "") + std::to_string(rs[k]);
    s += " on host " + order[i];
  }
  return s;
}

PeerWatch::PeerWatch(Communicator& world, std::vector<std::string> hosts, PeerWatchOptions options,
                     std::function<void(const std::string&, bool)> on_lost,
                     std::function<void(int, const std::string&)> on_failure)
    : me_(world.rank()),
      size_(world.size()),
      hosts_(std::move(hosts)),
      options_(options),
      on_lost_(std::move(on_lost)),
      on_failure_(std::move(on_failure)) {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
  char announce[kAnnounceBytes] = {0};  // "port addr addr ..." from rank 0; port 0: no watch
  if (me_ == 0) {
    fds_.assign((size_t)size_, -1);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    socklen_t len = sizeof sa;
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int port = 0;
    if (listen_fd_ >= 0 && bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
        listen(listen_fd_, size_) == 0 && getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0)
      port = ntohs(sa.sin_port);
    std::string text = std::to_string(port);
    for (const auto& a : local_addresses())
      if (text.size() + a.size() + 2 < kAnnounceBytes) text += " " + a;
    std::snprintf(announce, sizeof announce, "%s", text.c_str());
    if (port == 0) {
      std::fprintf(stderr, "moebench: rank 0 of %d: cannot listen for the peer watch (%s); a lost rank is "
                   "reported by the launcher only\n", size_, std::strerror(errno));
      std::fflush(stderr);
    }
  }
  world.broadcast(announce, sizeof announce, DType::u8, 0);
  std::stringstream ss(announce);
  int port = 0;
  ss >> port;
  if (port == 0) return;
  if (me_ != 0) {
    std::vector<std::string> candidates;
    if (hosts_.size() == (size_t)size_ && hosts_[(size_t)me_] == hosts_[0]) candidates.push_back("127.0.0.1");
    for (std::string a; ss >> a;) candidates.push_back(a);
    std::string why, tried;
    int fd = -1;
    for (const auto& a : candidates) {
      fd = connect_to(a, port, 3.0, &why);
      if (fd >= 0) break;
      tried += (tried.empty() ? "" : "; ") + why;
    }
    if (fd < 0) {
      std::fprintf(stderr, "moebench: rank %d of %d: cannot reach rank 0 for the peer watch (%s); a lost rank "
                   "is reported by the launcher only\n", me_, size_, tried.empty() ? "no address" : tried.c_str());
      std::fflush(stderr);
      return;
    }
    const int32_t rank = me_;
    (void)send(fd, &rank, sizeof rank, MSG_NOSIGNAL);
    fds_.assign(1, fd);
  }
  thread_ = std::thread([this] {
    block_stop_signals();
    if (me_ == 0) run_root();
    else run_peer();
  });
}

PeerWatch::~PeerWatch() {
  leave();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
  for (int fd : fds_)
    if (fd >= 0) close(fd);
  for (int fd : {listen_fd_, wake_[0], wake_[1]})
    if (fd >= 0) close(fd);
}

bool PeerWatch::stop_thread() {
  if (leaving_.exchange(true)) return false;
  if (thread_.joinable()) {
    const char c = 1;
    if (wake_[1] >= 0) (void)write(wake_[1], &c, 1);
    if (thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }
  return true;
}

bool PeerWatch::report_failure(const std::string& message, double timeout_s) {
  if (me_ == 0 || !stop_thread()) return false;
  const int fd = fds_.empty() ? -1 : fds_[0];
  bool acked = false;
  if (fd >= 0) {
    const uint32_t len = (uint32_t)std::min<size_t>(message.size(), 64 * 1024);
    std::string frame(1, kFailure);
    frame.append(reinterpret_cast<const char*>(&len), sizeof len);
    frame.append(message, 0, len);
    const double deadline = now_s() + timeout_s;
    size_t sent = 0;
    while (sent < frame.size() && now_s() < deadline) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += (size_t)n;
      else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
    }
    while (sent == frame.size() && !acked && now_s() < deadline) {  // heartbeats may come first
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
      if (n > 0 && std::memchr(buf, kAck, (size_t)n)) acked = true;
    }
  }
  for (int& f : fds_) {
    send_byte(f, kGoodbye);
    if (f >= 0) close(f);
    f = -1;
  }
  return acked;
}

void PeerWatch::leave() {
  if (!stop_thread()) return;
  for (int& fd : fds_) {  // the thread has ended: the goodbye goes out before the close
    send_byte(fd, kGoodbye);
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

void PeerWatch::lost(const std::vector<int>& ranks, bool closed) {
  if (leaving_.exchange(true)) return;
  for (int fd : fds_) send_byte(fd, kGoodbye);  // this rank ends the job: its own end is no news
  on_lost_("lost " + describe_lost_ranks(ranks, hosts_) + " (" +
               lost_reason(closed, ranks.size() > 1, options_.timeout_s) + ")",
           on_rank0_host());
}

void PeerWatch::run_root() {
  std::vector<double> last((size_t)size_, 0);
  std::vector<bool> bye((size_t)size_, false);
  std::vector<std::string> in((size_t)size_);  // each rank's bytes not parsed yet
  std::vector<int> pending;  // accepted, rank id not read yet
  std::vector<int> lost_ranks;
  bool closed = false;  // some connection closed (else: silent)
  double first_loss = 0, last_beat = 0;
  while (!leaving_) {
    std::vector<pollfd> p{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (int fd : pending) p.push_back({fd, POLLIN, 0});
    for (int fd : fds_)
      if (fd >= 0) p.push_back({fd, POLLIN, 0});
    if (poll(p.data(), p.size(), 100) < 0 && errno != EINTR) break;
    if (leaving_) break;
    const double now = now_s();
    if (p[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) pending.push_back(fd);
    }
    for (size_t i = 0; i < pending.size();) {  // the rank id (4 bytes, sent right after connect)
      int32_t rank = -1;
      const ssize_t n = recv(pending[i], &rank, sizeof rank, MSG_DONTWAIT | MSG_PEEK);
      if (n == (ssize_t)sizeof rank) {
        (void)recv(pending[i], &rank, sizeof rank, MSG_DONTWAIT);
        if (rank > 0 && rank < size_ && fds_[(size_t)rank] < 0) {
          fds_[(size_t)rank] = pending[i];
          last[(size_t)rank] = now;
        } else {
          close(pending[i]);
        }
        pending.erase(pending.begin() + (long)i);
      } else if (n == 0) {
        close(pending[i]);
        pending.erase(pending.begin() + (long)i);
      } else {
        ++i;
      }
    }
    for (int r = 1; r < size_; ++r) {
      int& fd = fds_[(size_t)r];
      if (fd < 0) continue;
      bool said_bye = bye[(size_t)r], got = false;
      const bool open = read_into(fd, in[(size_t)r], &got);
      std::vector<std::string> failures;
      parse_peer_messages(in[(size_t)r], &said_bye, &failures);
      for (const std::string& message : failures) {  // its end is reported, not a loss
        if (on_failure_) on_failure_(r, message);
        send_byte(fd, kAck);
        said_bye = true;
      }
      bye[(size_t)r] = said_bye;
      if (got) last[(size_t)r] = now;
      if (open) continue;
      close(fd);
      fd = -1;
      if (!said_bye) {
        lost_ranks.push_back(r);
        closed = true;
      }
    }
    for (int r = 1; r < size_ && options_.timeout_s > 0; ++r)
      if (fds_[(size_t)r] >= 0 && !bye[(size_t)r] && now - last[(size_t)r] > options_.timeout_s) {
        lost_ranks.push_back(r);
        close(fds_[(size_t)r]);
        fds_[(size_t)r] = -1;
      }
    if (now - last_beat >= options_.interval_s) {
      for (int fd : fds_) send_byte(fd, kHeartbeat);
      last_beat = now;
    }
    if (!lost_ranks.empty() && first_loss == 0) first_loss = now;
    if (first_loss > 0 && now - first_loss >= 0.2) {  // ranks of one host die together: one message
      std::sort(lost_ranks.begin(), lost_ranks.end());
      for (int fd : pending) close(fd);
      lost(lost_ranks, closed);
      return;
    }
  }
  for (int fd : pending) close(fd);
}

void PeerWatch::run_peer() {
  const int fd = fds_[0];
  double last = now_s(), last_beat = 0;
  bool bye = false;
  while (!leaving_) {
    pollfd p[2] = {{wake_[0], POLLIN, 0}, {fd, POLLIN, 0}};
    if (poll(p, 2, 100) < 0 && errno != EINTR) break;
    if (leaving_) break;
    const double now = now_s();
    bool got = false;
    const bool open = drain(fd, &got, &bye);
    if (bye) return;  // rank 0 left or ends the job itself: nothing for this rank to say
    if (got) last = now;
    if (!open || (options_.timeout_s > 0 && now - last > options_.timeout_s)) {
      // Rank 1 says it; the others only if the job is still alive 5 s later (one message).
      for (int waited = 0; me_ != 1 && waited < 50 && !leaving_; ++waited) usleep(100000);
      lost({0}, !open);
      return;
    }
    if (now - last_beat >= options_.interval_s) {
      send_byte(fd, kHeartbeat);
      last_beat = now;
    }
  }
}

std::unique_ptr<PeerWatch> watch_peers_across_hosts(Communicator& world,
                                                    std::function<void(const std::string&, bool)> on_lost,
                                                    std::function<void(int, const std::string&)> on_failure) {
  if (world.size() < 2) return nullptr;
  std::vector<std::string> hosts = gather_hostnames(world);
  if (std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts.front(); })) return nullptr;
  return std::make_unique<PeerWatch>(world, std::move(hosts), peer_watch_options_from_env(), std::move(on_lost),
                                     std::move(on_failure));
}

}  // namespace moebench

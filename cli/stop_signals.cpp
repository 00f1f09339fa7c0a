// Stop-signal handlers and the debounced count of stop requests (stop_signals.h).
#include "stop_signals.h"

#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <initializer_list>

namespace moebench::cli {
namespace {

std::atomic<int> g_requests{0};
std::atomic<int64_t> g_first_ns{0};  // monotonic time of the first request; 0: none yet

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + 1;  // never 0
}

extern "C" void count_only(int) { count_stop_signal(); }

}  // namespace

void install_stop_handler(void (*handler)(int), int flags) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (int other : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, other);
    sa.sa_flags = flags;
    sigaction(sig, &sa, nullptr);
  }
}

void count_stop_signal() {
  const int64_t now = monotonic_ns();
  int64_t first = 0;
  if (g_first_ns.compare_exchange_strong(first, now)) {
    g_requests.store(1);
    return;
  }
  if (now - first >= (int64_t)(kStopDebounceS * 1e9)) g_requests.store(2);
}

void install_stop_counter(int flags) { install_stop_handler(count_only, flags); }

int stop_requests() { return g_requests.load(); }

double seconds_since_stop_request() {
  const int64_t first = g_first_ns.load();
  return first == 0 ? 0.0 : (double)(monotonic_ns() - first) / 1e9;
}

}  // namespace moebench::cli

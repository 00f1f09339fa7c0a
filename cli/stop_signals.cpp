// Stop-signal handlers (stop_signals.h).
#include "stop_signals.h"

#include <csignal>
#include <initializer_list>

namespace moebench::cli {

void install_stop_handler(void (*handler)(int), int flags) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace moebench::cli

#pragma once
// The stop signals of `moebench run` (SIGINT, SIGTERM, SIGHUP), for the launcher and the ranks.
//
// Stop requests are counted with a debounce: the first signal is a request to stop after the
// current step; a later one is a second request (stop now) only when it comes at least
// kStopDebounceS after the first. Signals that arrive together are one request: `timeout`
// sends its signal to the command and then to its whole process group, a terminal's Ctrl-C
// reaches every process of the foreground group, and a launcher relays what it got.
namespace moebench::cli {

inline constexpr double kStopDebounceS = 0.5;

// Installs `handler` for SIGINT, SIGTERM and SIGHUP, except where the signal was ignored when
// we started (`nohup` ignores SIGHUP, a shell's background job SIGINT): that stays ignored.
// While the handler runs, the other stop signals wait.
void install_stop_handler(void (*handler)(int), int flags);

// Counts one stop signal (async-signal-safe: for the handlers).
void count_stop_signal();
// install_stop_handler with a handler that only counts (a launcher, bench predictor).
void install_stop_counter(int flags);
// The stop requests so far: 0, 1 (stop after the current step), 2 (a second request).
int stop_requests();
// Seconds since the first stop request (0 without one).
double seconds_since_stop_request();

}  // namespace moebench::cli

#pragma once
// The stop signals of `moebench run` (SIGINT, SIGTERM, SIGHUP), for the launcher and the ranks.
namespace moebench::cli {

// Installs `handler` for SIGINT, SIGTERM and SIGHUP, except where the signal was ignored when
// we started (`nohup` ignores SIGHUP, a shell's background job SIGINT): that stays ignored.
void install_stop_handler(void (*handler)(int), int flags);

}  // namespace moebench::cli

#pragma once
// Internal: whether the process that records a RUNNING run is still alive (the run store shows,
// and on a read-write open stores, a run whose process is gone as FAILED). A process is named by
// its host, the host's boot id, its pid and its start time: Linux reuses pids and a reboot
// starts them over, so a pid alone may name another process by now. Linux /proc only; where
// there is no /proc, kill(pid, 0) decides (and a zombie or a reused pid is not noticed).
#include <cstdint>
#include <optional>
#include <string>

namespace moebench::store_detail {

// This host's boot id (/proc/sys/kernel/random/boot_id), "" where there is none.
std::string current_boot_id();

// The start time of `pid` in clock ticks after boot (/proc/<pid>/stat field 22); nullopt when
// there is no such process (or no /proc).
std::optional<int64_t> process_start_ticks(int64_t pid);

// True only when the process certainly is gone: the host rebooted since (boot_id known and
// different), no process has the pid, it is a zombie (exited, not yet reaped: an init that does
// not reap promptly keeps it), or the pid now belongs to a process started at another time
// (start_ticks known and different). A pid <= 0 or out of range is unknown: false.
bool process_gone(int64_t pid, int64_t start_ticks, const std::string& boot_id);

}  // namespace moebench::store_detail

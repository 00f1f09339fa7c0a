#pragma once
// Internal to the config loader: the bounds of values that have a sign rule only elsewhere
// ("> 0", ">= 0") but would otherwise reach the models as 1e-300 or 1e300 (300-digit times,
// "inf PiB", a link emulator that overflows its clock). Each is far beyond any real machine and
// far inside what a double prints or an int64 nanosecond clock holds; docs/limits.md "Values
// and ranges" lists them with these reasons.
namespace moebench::config_detail {

// Bandwidths, GB/s (links, copies, SSD, measured bus bandwidths): 1 MB/s (a slow WAN) to 1e9
// GB/s (a link that costs nothing, as tests model one; NVLink 5 is 1.8e3 GB/s).
inline constexpr double kMinBandwidthGbs = 1e-3, kMaxBandwidthGbs = 1e9;
// Latencies and fixed costs, microseconds: at most one second per message or task.
inline constexpr double kMaxMicroseconds = 1e6;
// Cost per MB a comm task sends, microseconds: at most 1000 s per MB (1 kB/s; calibrate's fit
// on a slow or oversubscribed host can reach 10 us per byte, tst_calibration).
inline constexpr double kMaxMicrosecondsPerMb = 1e9;
// Device compute, TFLOP/s: 1 MFLOP/s to 1 EFLOP/s per device (an H100 is ~1e3 dense bf16).
inline constexpr double kMinDeviceTflops = 1e-6, kMaxDeviceTflops = 1e6;
// Memory and storage per device, GiB (0 = not described): about 1 KiB to 1 PiB of device or
// host memory (an H200 has 141 GiB, a large host a few TiB), up to 1 EiB of SSD.
inline constexpr double kMinGib = 1e-6, kMaxMemoryGib = 1e6, kMaxSsdGib = 1e9;
// Fitted task factors (calibrate): a modelled time stretched or shrunk up to a million times.
inline constexpr double kMinTaskFactor = 1e-6, kMaxTaskFactor = 1e6;
// Curve points: FLOPs of one task, bytes of one buffer (1e18 = an exaFLOP, an exabyte).
inline constexpr double kMaxCurvePoint = 1e18;

// emulate.time_scale: the emulated cluster up to a thousand times faster (messages paced to
// nanoseconds) or a million times slower (a 2 us latency becomes 2 s) than described; "auto"
// on a CPU host gives a few hundred to a few thousand.
inline constexpr double kMinTimeScale = 1e-3, kMaxTimeScale = 1e6;

}  // namespace moebench::config_detail

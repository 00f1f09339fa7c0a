#pragma once
// Ranks that share one GPU. NCCL refuses a communicator in which two ranks of one host use the
// same device ("Duplicate GPU detected"), yet sharing one GPU is the only way to run several
// ranks on a 1-GPU machine. moebench's decision: such ranks get distinct NCCL host identities
// (NCCL_HOSTID = <hostname>/rank<r>, and NCCL_SOCKET_IFNAME = lo unless the user set them), so
// NCCL connects them as separate hosts over loopback sockets: real NCCL traffic, slower than
// NVLink/shared memory. NcclCommunicator applies this when it starts; the rule is here, plain
// C++, so the CPU test suite checks it.
#include <cstdint>
#include <string>
#include <vector>

namespace moebench {

// shares[i] = true when another rank j != i has host[j] == host[i] and device[j] == device[i].
std::vector<bool> ranks_sharing_a_device(const std::vector<uint64_t>& host, const std::vector<int>& device);

// A stable 64-bit identity of a host name (FNV-1a), the same on every rank of that host.
uint64_t host_identity(const std::string& hostname);

}  // namespace moebench

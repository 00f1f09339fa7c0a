#include "moebench/dist/device_sharing.h"

#include <map>
#include <stdexcept>
#include <utility>

namespace moebench {

std::vector<bool> ranks_sharing_a_device(const std::vector<uint64_t>& host, const std::vector<int>& device) {
  if (host.size() != device.size())
    throw std::invalid_argument("ranks_sharing_a_device: " + std::to_string(host.size()) + " hosts but " +
                                std::to_string(device.size()) + " devices");
  std::map<std::pair<uint64_t, int>, int> users;
  for (size_t i = 0; i < host.size(); ++i) ++users[{host[i], device[i]}];
  std::vector<bool> shares(host.size());
  for (size_t i = 0; i < host.size(); ++i) shares[i] = users[{host[i], device[i]}] > 1;
  return shares;
}

uint64_t host_identity(const std::string& hostname) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : hostname) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace moebench

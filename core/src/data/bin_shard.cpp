#include "moebench/data/bin_shard.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "file_util.h"

namespace moebench {
namespace {

uint32_t load_le32(const unsigned char* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

void store_le32(unsigned char* p, uint32_t v) {
  p[0] = (unsigned char)(v & 0xff);
  p[1] = (unsigned char)((v >> 8) & 0xff);
  p[2] = (unsigned char)((v >> 16) & 0xff);
  p[3] = (unsigned char)((v >> 24) & 0xff);
}

std::string version_hint() { return "expected 1 = uint16 tokens or 2 = uint32 tokens"; }

struct ShardLayout {
  size_t count;  // tokens
  size_t width;  // bytes per token
};

// Checks the 1024-byte header against the size of the whole shard (header included).
ShardLayout check_header(const unsigned char* header, uint64_t size, const std::string& path) {
  const int32_t magic = (int32_t)load_le32(header);
  const int32_t version = (int32_t)load_le32(header + 4);
  const int32_t count = (int32_t)load_le32(header + 8);
  if (magic != kBinShardMagic)
    throw DataError(path + ": bad magic " + std::to_string(magic) + " (expected " +
                    std::to_string(kBinShardMagic) + ", an llm.c token shard)");
  if (version != 1 && version != 2)
    throw DataError(path + ": unknown version " + std::to_string(version) + " (" + version_hint() + ")");
  if (count < 0)
    throw DataError(path + ": negative token count " + std::to_string(count) + " in the header");

  const uint64_t width = version == 1 ? 2 : 4;
  const uint64_t data_bytes = size - kBinShardHeaderBytes;
  const uint64_t expected = (uint64_t)count * width;
  if (data_bytes < expected)
    throw DataError(path + ": truncated: header says " + std::to_string(count) + " tokens, file holds " +
                    std::to_string(data_bytes / width) +
                    (data_bytes % width ? " and a partial token" : ""));
  if (data_bytes > expected)
    throw DataError(path + ": " + std::to_string(data_bytes - expected) +
                    " trailing bytes: header says " + std::to_string(count) + " tokens (" +
                    std::to_string(expected) + " bytes of uint" + std::to_string(width * 8) +
                    " data) but the file holds " + std::to_string(data_bytes) + " bytes after the header");
  return {(size_t)count, (size_t)width};
}

void check_size(uint64_t size, const std::string& path) {
  if (size < (uint64_t)kBinShardHeaderBytes)
    throw DataError(path + ": file is " + std::to_string(size) + " bytes, shorter than the " +
                    std::to_string(kBinShardHeaderBytes) + "-byte llm.c shard header");
}

// Decodes n tokens of `width` bytes into out[0, n); `first` is the index of the first one.
void decode_tokens(const unsigned char* src, size_t n, size_t width, int32_t* out, size_t first,
                   const std::string& path) {
  if (width == 2) {
    for (size_t i = 0; i < n; ++i) out[i] = (int32_t)((uint32_t)src[2 * i] | ((uint32_t)src[2 * i + 1] << 8));
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t v = load_le32(src + 4 * i);
    if (v > (uint32_t)INT32_MAX)
      throw DataError(path + ": token " + std::to_string(v) + " at index " + std::to_string(first + i) +
                      " does not fit a signed 32-bit token id");
    out[i] = (int32_t)v;
  }
}

}  // namespace

std::vector<int32_t> read_bin_shard(const std::string& path) {
  std::ifstream in;
  const uint64_t size = data_detail::open_input(path, in);
  check_size(size, path);
  unsigned char header[kBinShardHeaderBytes];
  if (!in.read((char*)header, kBinShardHeaderBytes))
    throw DataError(path + ": cannot read the shard header");
  const ShardLayout layout = check_header(header, size, path);

  // Read in chunks: a shard can be gigabytes, the file is not held twice.
  std::vector<int32_t> tokens(layout.count);
  const size_t chunk = 1 << 20;  // tokens per read
  std::vector<unsigned char> buf;
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min(chunk, tokens.size() - done);
    buf.resize(n * layout.width);
    if (!in.read((char*)buf.data(), (std::streamsize)buf.size()))
      throw DataError(path + ": read error in the token data at token " + std::to_string(done));
    decode_tokens(buf.data(), n, layout.width, tokens.data() + done, done, path);
    done += n;
  }
  return tokens;
}

std::vector<int32_t> parse_bin_shard(std::span<const uint8_t> bytes, const std::string& name) {
  check_size(bytes.size(), name);
  const ShardLayout layout = check_header(bytes.data(), bytes.size(), name);
  std::vector<int32_t> tokens(layout.count);
  decode_tokens(bytes.data() + kBinShardHeaderBytes, layout.count, layout.width, tokens.data(), 0, name);
  return tokens;
}

void write_bin_shard(const std::string& path, const std::vector<int32_t>& tokens, int version) {
  if (version != 1 && version != 2)
    throw DataError(path + ": cannot write unknown shard version " + std::to_string(version) + " (" +
                    version_hint() + ")");
  if (tokens.size() > (size_t)INT32_MAX)
    throw DataError(path + ": " + std::to_string(tokens.size()) +
                    " tokens do not fit one shard (the header count is int32)");
  const int64_t max_token = version == 1 ? 65535 : INT32_MAX;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] > max_token)
      throw DataError(path + ": token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                      " does not fit a version " + std::to_string(version) + " shard (uint" +
                      (version == 1 ? "16" : "32") + " tokens)");

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw DataError(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  unsigned char header[kBinShardHeaderBytes] = {};
  store_le32(header, (uint32_t)kBinShardMagic);
  store_le32(header + 4, (uint32_t)version);
  store_le32(header + 8, (uint32_t)tokens.size());
  out.write((const char*)header, kBinShardHeaderBytes);

  const size_t width = version == 1 ? 2 : 4;
  const size_t chunk = 1 << 20;
  std::vector<unsigned char> buf;
  for (size_t done = 0; done < tokens.size() && out;) {
    const size_t n = std::min(chunk, tokens.size() - done);
    buf.resize(n * width);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t v = (uint32_t)tokens[done + i];
      if (width == 2) {
        buf[2 * i] = (unsigned char)(v & 0xff);
        buf[2 * i + 1] = (unsigned char)((v >> 8) & 0xff);
      } else {
        store_le32(&buf[4 * i], v);
      }
    }
    out.write((const char*)buf.data(), (std::streamsize)buf.size());
    done += n;
  }
  out.flush();
  if (!out) throw DataError(path + ": write failed (" + std::strerror(errno) + ")");
}

}  // namespace moebench

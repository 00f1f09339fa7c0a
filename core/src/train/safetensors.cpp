#include "moebench/train/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace moebench {
namespace {

namespace fs = std::filesystem;

// Upper bound on a sane header (the reference implementation uses 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Number of elements, or -1 on a negative dimension / overflow.
int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 4 / d) return -1;
    n *= d;
  }
  return n;
}

void append_le_floats(std::string& out, const float* data, size_t n) {
  const size_t at = out.size();
  out.resize(at + n * 4);
  if constexpr (std::endian::native == std::endian::little) {
    if (n) std::memcpy(&out[at], data, n * 4);
  } else {
    for (size_t i = 0; i < n; ++i) {
      const uint32_t v = std::bit_cast<uint32_t>(data[i]);
      for (int k = 0; k < 4; ++k) out[at + 4 * i + k] = (char)((v >> (8 * k)) & 0xff);
    }
  }
}

float load_le_float(const unsigned char* p) {
  const uint32_t v = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
  return std::bit_cast<float>(v);
}

uint64_t json_uint(const nlohmann::json& j, const std::string& path, const std::string& what) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return (uint64_t)j.get<int64_t>();
  throw CheckpointError(path + ": " + what + " must be a non-negative integer, got " + j.dump());
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorRef>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorRef& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw CheckpointError(path + ": invalid tensor name \"" + t.name + "\"");
    if (!names.insert(t.name).second)
      throw CheckpointError(path + ": duplicate tensor name \"" + t.name + "\"");
    const int64_t n = numel(t.shape);
    if (n < 0)
      throw CheckpointError(path + ": tensor \"" + t.name + "\" has an invalid shape " + shape_str(t.shape));
    if (n > 0 && t.data == nullptr && !t.fill)
      throw CheckpointError(path + ": tensor \"" + t.name + "\" has no data");
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = "F32";
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + (uint64_t)n * 4};
    header[t.name] = std::move(entry);
    offset += (uint64_t)n * 4;
  }

  std::string head = header.dump();
  head.append((8 - head.size() % 8) % 8, ' ');  // data starts 8-byte aligned (the prefix is 8 bytes)
  std::string out;
  out.reserve(8 + head.size() + offset);
  const uint64_t hlen = head.size();
  for (int k = 0; k < 8; ++k) out.push_back((char)((hlen >> (8 * k)) & 0xff));
  out += head;
  std::vector<float> filled;
  for (const TensorRef& t : tensors) {
    const float* data = t.data;
    if (!data && t.fill) {
      filled.resize((size_t)numel(t.shape));
      t.fill(filled.data());
      data = filled.data();
    }
    append_le_floats(out, data, (size_t)numel(t.shape));
  }

  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw CheckpointError(tmp + ": cannot open for writing (" + std::strerror(errno) + ")");
    f.write(out.data(), (std::streamsize)out.size());
    f.flush();
    if (!f) {
      const std::string why = std::strerror(errno);
      f.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw CheckpointError(tmp + ": write failed (" + why + ")");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw CheckpointError(path + ": cannot rename " + tmp + " into place (" + ec.message() + ")");
  }
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw CheckpointError(path + ": no such file");
  if (fs::is_directory(st)) throw CheckpointError(path + ": is a directory, not a safetensors file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CheckpointError(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw CheckpointError(path + ": cannot read file size (" + ec.message() + ")");
  std::vector<uint8_t> bytes((size_t)size);
  if (!f.read(reinterpret_cast<char*>(bytes.data()), (std::streamsize)size))
    throw CheckpointError(path + ": read error (" + std::strerror(errno) + ")");
  return parse_safetensors(bytes, path);
}

SafetensorsFile parse_safetensors(std::span<const uint8_t> bytes, const std::string& path) {
  const uint64_t size = bytes.size();
  if (size < 8)
    throw CheckpointError(path + ": file is " + std::to_string(size) +
                          " bytes, shorter than the 8-byte header length");
  const unsigned char* u = bytes.data();

  uint64_t hlen = 0;
  for (int k = 0; k < 8; ++k) hlen |= (uint64_t)u[k] << (8 * k);
  if (hlen > size - 8)
    throw CheckpointError(path + ": header length " + std::to_string(hlen) + " is larger than the file (" +
                          std::to_string(size - 8) + " bytes after the 8-byte length; truncated or not a safetensors file)");
  if (hlen > kMaxHeaderBytes)
    throw CheckpointError(path + ": header length " + std::to_string(hlen) + " exceeds the " +
                          std::to_string(kMaxHeaderBytes) + "-byte limit");

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(u + 8, u + 8 + hlen);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + ": header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) throw CheckpointError(path + ": header is not a JSON object");

  const uint64_t data_start = 8 + hlen;
  const uint64_t data_size = size - data_start;
  SafetensorsFile result;
  struct Span { uint64_t begin, end; std::string name; };
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw CheckpointError(path + ": __metadata__ is not a JSON object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string())
          throw CheckpointError(path + ": __metadata__ value for \"" + k + "\" is not a string");
        result.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    if (name.empty()) throw CheckpointError(path + ": a tensor has an empty name");
    const std::string what = "tensor \"" + name + "\"";
    if (!entry.is_object()) throw CheckpointError(path + ": " + what + " is not a JSON object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string())
      throw CheckpointError(path + ": " + what + " has no dtype string");
    const std::string dtype = entry["dtype"].get<std::string>();
    if (dtype != "F32")
      throw CheckpointError(path + ": " + what + " has unsupported dtype " + dtype + " (only F32 is supported)");
    if (!entry.contains("shape") || !entry["shape"].is_array())
      throw CheckpointError(path + ": " + what + " has no shape array");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      throw CheckpointError(path + ": " + what + " needs data_offsets [begin, end]");
    LoadedTensor t;
    for (const auto& d : entry["shape"]) {
      const uint64_t v = json_uint(d, path, what + " shape dimension");
      if (v > (uint64_t)std::numeric_limits<int64_t>::max())
        throw CheckpointError(path + ": " + what + " has an invalid shape dimension " + d.dump());
      t.shape.push_back((int64_t)v);
    }
    const uint64_t begin = json_uint(entry["data_offsets"][0], path, what + " data_offsets");
    const uint64_t end = json_uint(entry["data_offsets"][1], path, what + " data_offsets");
    std::string offs = "[";  // (built by appending: GCC 12 warns falsely on "[" + std::string)
    offs += std::to_string(begin);
    offs += ", ";
    offs += std::to_string(end);
    offs += "]";
    if (begin > end || end > data_size)
      throw CheckpointError(path + ": " + what + " data_offsets " + offs + " out of range (the data section is " +
                            std::to_string(data_size) + " bytes)");
    const int64_t n = numel(t.shape);
    if (n < 0) throw CheckpointError(path + ": " + what + " has an invalid shape " + shape_str(t.shape));
    if (end - begin != (uint64_t)n * 4)
      throw CheckpointError(path + ": " + what + " data_offsets " + offs + " span " + std::to_string(end - begin) +
                            " bytes, but shape " + shape_str(t.shape) + " of F32 needs " +
                            std::to_string((uint64_t)n * 4));
    spans.push_back({begin, end, name});
    t.data.resize((size_t)n);
    const unsigned char* src = u + data_start + begin;
    if constexpr (std::endian::native == std::endian::little) {
      if (n) std::memcpy(t.data.data(), src, (size_t)n * 4);
    } else {
      for (int64_t i = 0; i < n; ++i) t.data[(size_t)i] = load_le_float(src + 4 * i);
    }
    result.tensors[name] = std::move(t);
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      throw CheckpointError(path + ": data of tensors \"" + spans[i - 1].name + "\" and \"" + spans[i].name +
                            "\" overlap (data_offsets [" + std::to_string(spans[i - 1].begin) + ", " +
                            std::to_string(spans[i - 1].end) + "] and [" + std::to_string(spans[i].begin) +
                            ", " + std::to_string(spans[i].end) + "])");
  return result;
}

}  // namespace moebench

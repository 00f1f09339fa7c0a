// The prompt of `moebench infer` (infer_prompt.h).
#include "infer_prompt.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "moebench/config/file_kind.h"
#include "moebench/config/usage_error.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;
}  // namespace

std::string read_prompt_file(const std::string& path) {
  const std::string opt = "--prompt-file: " + printable_excerpt(path, 200);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw UsageError(opt + ": no such file");
  if (!fs::is_regular_file(st))
    throw UsageError(opt + ": " + file_kind(st) + ", not a regular file (give a file of at most " +
                     std::to_string(kMaxPromptBytes) + " bytes)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(opt + ": cannot read it");
  std::string bytes(kMaxPromptBytes + 1, '\0');
  in.read(bytes.data(), (std::streamsize)bytes.size());
  bytes.resize((size_t)in.gcount());
  if (bytes.size() > kMaxPromptBytes) {
    const uintmax_t size = fs::file_size(path, ec);
    throw UsageError(opt + ": " + (ec ? std::string("the file") : std::to_string(size) + " bytes") +
                     " is over the limit of " + std::to_string(kMaxPromptBytes) + " bytes (1 MiB) for a prompt");
  }
  return bytes;
}

namespace {

std::vector<int> parse_ids(const std::string& text, const std::string& where) {
  std::vector<int> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(word, &used);
    } catch (const std::exception&) {
    }
    if (used != word.size() || id < 0)
      throw UsageError(where + ": '" + printable_excerpt(word) + "' is not a token id (an integer >= 0)");
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

std::string printable(const std::vector<int>& bytes) {
  std::string s;
  for (int id : bytes) {
    char buf[8];
    if (id >= 32 && id < 127) s += (char)id;
    else if (id == '\n') s += "\\n";
    else std::snprintf(buf, sizeof buf, "\\x%02x", id & 0xff), s += buf;
  }
  return s;
}

std::string printable_excerpt(const std::string& text, size_t max) {
  std::vector<int> head;
  for (size_t i = 0; i < text.size() && i < max; ++i) head.push_back((unsigned char)text[i]);
  std::string s = printable(head);
  if (text.size() > max) s += "... (" + std::to_string(text.size()) + " bytes)";
  return s;
}

std::vector<int> prompt_tokens(const std::string& prompt, const std::string& prompt_file, const std::string& file_bytes,
                               bool text_model) {
  if (!prompt.empty()) return parse_ids(prompt, "--prompt");
  if (prompt_file.empty()) return {0};
  if (text_model) {
    std::vector<int> bytes;
    for (unsigned char c : file_bytes) bytes.push_back(c);
    return bytes;
  }
  return parse_ids(file_bytes, "--prompt-file: " + printable_excerpt(prompt_file, 200));
}

}  // namespace moebench::cli

// Quoting and checking the words of a remote launch (moebench/remote/remote_shell.h).
#include "moebench/remote/remote_shell.h"

#include <cctype>
#include <random>
#include <stdexcept>

namespace moebench::remote {

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string display_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& w : argv) {
    bool plain = !w.empty();
    for (char c : w)
      plain = plain && (std::isalnum((unsigned char)c) || std::string_view("_./=:@%+,-").find(c) != std::string_view::npos);
    out += (out.empty() ? "" : " ") + (plain ? w : shell_quote(w));
  }
  return out;
}

std::string quote_remote_path(std::string_view path) {
  if (path == "~" || path == "~/") return std::string(path);
  if (path.substr(0, 2) == "~/") return "~/" + shell_quote(path.substr(2));
  return shell_quote(path);
}

namespace {
bool is_meta(char c) { return std::string_view(";|&`$()<>\\\n\r").find(c) != std::string_view::npos; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
}  // namespace

std::vector<std::string> split_launcher_prefix(std::string_view prefix) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : prefix) {
    if (is_meta(c))
      throw std::invalid_argument(std::string("launcher prefix contains the shell metacharacter '") +
                                  (c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c)) +
                                  "'; only plain words and simple '...' or \"...\" quoting are allowed");
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (is_space(c)) {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote) throw std::invalid_argument(std::string("launcher prefix has an unterminated ") + quote + " quote");
  if (in_word) words.push_back(cur);
  return words;
}

void check_ssh_host(std::string_view host) {
  bool blank = true;
  for (char c : host) blank = blank && std::isspace((unsigned char)c);
  if (blank) throw std::invalid_argument("remote launch needs a host");
  if (host.front() == '-') throw std::invalid_argument("remote host must not start with '-': '" + std::string(host) + "'");
  for (char c : host)
    if (std::isspace((unsigned char)c) || std::iscntrl((unsigned char)c))
      throw std::invalid_argument("remote host must not hold spaces or control characters: '" + std::string(host) + "'");
}

void check_ssh_option(std::string_view option) {
  size_t key = 0;
  while (key < option.size() && std::isalnum((unsigned char)option[key])) ++key;
  const bool separated = key < option.size() && (option[key] == '=' || is_space(option[key]));
  if (key == 0 || !separated || key + 1 >= option.size())
    throw std::invalid_argument("ssh option '" + std::string(option) +
                                "' is not Key=Value (one ssh -o option, e.g. Port=2222 or ProxyJump=gw)");
}

std::string new_run_id(std::time_t now) {
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S-", &tm);
  std::random_device rd;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%06x", unsigned(rd() & 0xffffff));
  return std::string(stamp) + hex;
}

std::string join_remote_path(std::string_view dir, std::string_view rel) {
  if (dir.empty()) return std::string(rel);
  std::string d(dir);
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (d != "/") d += '/';
  return d + std::string(rel);
}

std::string remote_shell_command(std::string_view dir, std::string_view prefix, std::string_view program,
                                 const std::vector<std::string>& args) {
  std::string cmd;
  for (const std::string& w : split_launcher_prefix(prefix)) cmd += shell_quote(w) + " ";
  cmd += quote_remote_path(program);  // a program under ~/ is found in the remote home
  for (const std::string& a : args) cmd.append(" ").append(shell_quote(a));
  if (dir.empty()) return cmd;
  std::string in_dir = "cd ";
  return in_dir.append(quote_remote_path(dir)).append(" && ").append(cmd);
}

}  // namespace moebench::remote

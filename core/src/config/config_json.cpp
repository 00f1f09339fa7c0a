#include "moebench/config/config_json.h"

#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "config_detail.h"

namespace moebench {
namespace {

using config_detail::FieldDef;
using config_detail::Kind;

[[noreturn]] void wrong_type(const FieldDef& f, const char* expected, const nlohmann::json& v) {
  std::string got = v.dump();
  if (got.size() > 48) got = got.substr(0, 45) + "...";
  throw std::invalid_argument("stored config: " + f.name() + ": expected " + expected + ", got " + got);
}

template <class T>
T integer(const FieldDef& f, const nlohmann::json& v) {
  if (!v.is_number_integer()) wrong_type(f, "integer", v);
  return v.get<T>();
}

double number(const FieldDef& f, const nlohmann::json& v) {
  if (!v.is_number()) wrong_type(f, "number", v);
  return v.get<double>();
}

std::string text(const FieldDef& f, const nlohmann::json& v) {
  if (!v.is_string()) wrong_type(f, "string", v);
  return v.get<std::string>();
}

template <class T, class Read>
std::vector<T> list(const FieldDef& f, const nlohmann::json& v, const char* expected, Read read) {
  if (!v.is_array()) wrong_type(f, expected, v);
  std::vector<T> out;
  for (const auto& x : v) out.push_back(read(f, x));
  return out;
}

// A number stored for an "auto or number" key ("50" in the config, 50 in the JSON).
std::string number_text(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

void assign(const FieldDef& f, Config& c, const nlohmann::json& v) {
  switch (f.kind) {
    case Kind::Int: f.get<int>(c) = integer<int>(f, v); return;
    case Kind::Int64: f.get<int64_t>(c) = integer<int64_t>(f, v); return;
    case Kind::UInt64: f.get<uint64_t>(c) = integer<uint64_t>(f, v); return;
    case Kind::Float: f.get<float>(c) = float(number(f, v)); return;
    case Kind::Double: f.get<double>(c) = number(f, v); return;
    case Kind::Bool:
      if (!v.is_boolean()) wrong_type(f, "boolean", v);
      f.get<bool>(c) = v.get<bool>();
      return;
    case Kind::String:
    case Kind::Path: f.get<std::string>(c) = text(f, v); return;
    case Kind::AutoOrNumber:
      f.get<std::string>(c) = v.is_number() ? number_text(v.get<double>()) : text(f, v);
      return;
    case Kind::Choice:
      if (const std::string problem = f.parse(f.ref(c), text(f, v)); !problem.empty())
        throw std::invalid_argument("stored config: " + f.name() + ": " + problem);
      return;
    case Kind::IntList:
    case Kind::Experts: f.get<std::vector<int>>(c) = list<int>(f, v, "integer array", integer<int>); return;
    case Kind::DoubleList: f.get<std::vector<double>>(c) = list<double>(f, v, "number array", number); return;
    case Kind::StringList: f.get<std::vector<std::string>>(c) = list<std::string>(f, v, "string array", text); return;
  }
}

}  // namespace

Config config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw std::invalid_argument("stored config: not a JSON object");
  Config c;
  for (const FieldDef& f : config_detail::fields()) {
    // "strategy.<x>" -> json["strategy"]["<x>"]
    const nlohmann::json* node = &json;
    std::string_view section = f.section;
    bool found = true;
    for (size_t dot; found && (dot = section.find('.')) != std::string_view::npos; section.remove_prefix(dot + 1)) {
      const auto it = node->find(std::string(section.substr(0, dot)));
      found = it != node->end() && it->is_object();
      if (found) node = &*it;
    }
    if (!found) continue;
    const auto sec = node->find(std::string(section));
    if (sec == node->end() || !sec->is_object()) continue;
    const auto value = sec->find(f.key);
    if (value != sec->end()) assign(f, c, *value);
  }
  return c;
}

Config config_from_json(const std::string& json_text) {
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded()) throw std::invalid_argument("stored config: not valid JSON");
  return config_from_json(j);
}

}  // namespace moebench

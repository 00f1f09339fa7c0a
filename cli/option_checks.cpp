// Numeric option checks (option_checks.h).
#include "option_checks.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace moebench::cli {
namespace {

// The text as given, cut for a message (a 10,000-character value stays one line).
std::string shown(const std::string& text) {
  constexpr size_t kMax = 48;
  if (text.size() <= kMax) return "'" + text + "'";
  return "'" + text.substr(0, kMax) + "...' (" + std::to_string(text.size()) + " characters)";
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::optional<std::string> whole_number_digits(const std::string& text) {
  size_t i = 0;
  std::string sign;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) sign = text[i++] == '-' ? "-" : "";
  std::string digits;  // the mantissa's digits, point removed
  long point = -1;     // digits before the point
  for (; i < text.size() && (std::isdigit((unsigned char)text[i]) || (text[i] == '.' && point < 0)); ++i)
    if (text[i] == '.') point = (long)digits.size();
    else digits += text[i];
  if (digits.empty() || i == text.size() || (text[i] != 'e' && text[i] != 'E')) return std::nullopt;
  if (point < 0) point = (long)digits.size();
  long exponent = 0;
  const char* first = text.data() + i + 1;
  const char* last = text.data() + text.size();
  if (first < last && *first == '+') ++first;
  const auto res = std::from_chars(first, last, exponent);
  if (res.ec != std::errc() || res.ptr != last || first == last || std::labs(exponent) > 100) return std::nullopt;
  const long whole = point + exponent;  // digits of the integer part
  std::string out;
  for (long d = 0; d < (long)digits.size(); ++d) {
    if (d >= whole && digits[(size_t)d] != '0') return std::nullopt;  // a fraction is left
    if (d < whole) out += digits[(size_t)d];
  }
  if (whole > (long)digits.size()) out.append((size_t)(whole - (long)digits.size()), '0');
  const size_t nonzero = out.find_first_not_of('0');
  out = nonzero == std::string::npos ? "0" : out.substr(nonzero);
  if (out.size() > 30) return std::nullopt;
  return out == "0" ? out : sign + out;
}

CLI::Validator whole_number(long long lo, long long hi) {
  const std::string range = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        std::string digits = whole_number_digits(s).value_or(s);
        if (!digits.empty() && digits[0] == '+') digits.erase(0, 1);
        long long v = 0;
        const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        const bool whole = !digits.empty() && res.ptr == digits.data() + digits.size();
        if (whole && res.ec == std::errc() && v >= lo && v <= hi) {
          s = std::to_string(v);  // plain decimal digits for CLI11 ("010" is not read as octal)
          return {};
        }
        return "must be " + range + ", got " + shown(s);
      },
      std::to_string(lo) + ".." + std::to_string(hi));  // help: "INT:1..2147483647"
}

namespace {

CLI::Validator number_check(double lo, bool lo_open, double hi) {
  const std::string range = lo_open ? "a number > " + number_text(lo) + " and at most " + number_text(hi)
                                    : "a number from " + number_text(lo) + " to " + number_text(hi);
  return CLI::Validator(
      [lo, lo_open, hi, range](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
        const bool number = !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
        if (number && (lo_open ? v > lo : v >= lo) && v <= hi) return {};
        return "must be " + range + ", got " + shown(s);
      },
      // help: "FLOAT:(0, 1e+08]", "FLOAT:[0, 1]"
      (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + "]");
}

}  // namespace

CLI::Validator positive_number(double hi) { return number_check(0.0, true, hi); }
CLI::Validator number_in(double lo, double hi) { return number_check(lo, false, hi); }

}  // namespace moebench::cli

#pragma once
// Checks of numeric command-line options, with readable messages that CLI11 prefixes with the
// option: "--steps: must be a whole number from 1 to 2147483647, got 0". A whole number may be
// written in exponent form when it is exactly one ("--context 1e12", "--steps 2.5e3"): the check
// rewrites it as digits before CLI11 converts it.
#include <CLI/CLI.hpp>

#include <climits>
#include <optional>
#include <string>

namespace moebench::cli {

// "1e12" -> "1000000000000", "2.5e3" -> "2500"; nullopt when `text` is not in exponent form or
// not a whole number ("1.5e0"), or has more than 30 digits (no option takes such a number).
std::optional<std::string> whole_number_digits(const std::string& text);

// A whole number in [lo, hi] (also in exponent form, see above). Give it with ->transform(), not
// ->check(): CLI11 hands a check a copy, and the digits must reach the conversion.
CLI::Validator whole_number(long long lo, long long hi);
inline CLI::Validator positive() { return whole_number(1, INT_MAX); }
inline CLI::Validator non_negative() { return whole_number(0, INT_MAX); }

// A finite number in (0, hi] ("must be a number > 0 and at most 1e+08, got 0").
CLI::Validator positive_number(double hi);
// A finite number in [lo, hi].
CLI::Validator number_in(double lo, double hi);

}  // namespace moebench::cli

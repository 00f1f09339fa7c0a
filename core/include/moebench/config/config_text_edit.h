#pragma once
// Editing a config's TOML text one key at a time, the way a person would: only the bytes of the
// value (or one inserted line / one appended section) change; comments, key order, blank lines,
// indentation and line endings elsewhere stay byte-identical. Used by the GUI config editor
// (form <-> raw text) and usable by any tool that rewrites a config file in place.
//
// Keys are "section.key" names of config_keys() (config_loader.h). Value literals are TOML
// values written on one line: 128, 1e-3, [0, 2], "text", true.
//
// Where a key lives in the text follows TOML: `name = ...` under a `[run]` header, or a dotted
// `run.name = ...` at the top level. Multi-line strings and arrays are skipped as values, so
// lines inside them are never mistaken for keys or headers. The scan is tolerant: a text with
// a syntax error elsewhere can still be edited.
#include <optional>
#include <string>
#include <string_view>

namespace moebench {

// Where `key` is set in a text: its value literal exactly as written (a multi-line array keeps
// its line breaks) and the 1-based line of the assignment.
struct ConfigValueLocation {
  std::string literal;  // "128", "\"quickstart\"", "[1, 3]"
  int line = 0;         // 1-based line of `key = ...`
  size_t begin = 0;     // byte offsets of the literal in the text: [begin, end)
  size_t end = 0;
};

// Sets `key` to `value_literal` in `text` and returns the new text:
//  - the key is written: its value is replaced (a trailing comment and the spacing before it
//    are kept);
//  - the section exists but not the key: `key = value` is inserted after the section's last key
//    (with that key's indentation; right after the [section] header when it has no keys);
//  - neither: a new `[section]` with the key is appended at the end of the text.
// Throws std::invalid_argument naming the key when it is not in config_keys(), naming the key
// and the value when the value is not one TOML value on one line, and when the section name is
// set to a plain value (`run = 3`). A section written as an inline table (`run = { ... }`) gets
// a missing key inside its braces.
std::string set_config_value(std::string_view text, const std::string& key,
                             const std::string& value_literal);

// The value literal of `key` as written in `text`; nullopt when the text does not set it.
// Throws std::invalid_argument for a key not in config_keys().
std::optional<std::string> get_config_value(std::string_view text, const std::string& key);
std::optional<ConfigValueLocation> find_config_value(std::string_view text, const std::string& key);

// A TOML value literal for `key` from what a user typed into a form:
//  - string and path keys: the text as typed, quoted and escaped ("a\"b" -> "\"a\\\"b\"");
//  - boolean keys: true/false (any letter case);
//  - integer array keys: "1, 3" is taken as [1, 3] (an empty text as []); for
//    "integer or integer array" keys a comma list likewise, one number stays a number;
//  - other keys: the trimmed text, which must be one TOML value.
// Throws std::invalid_argument naming the key (unknown key) or the key and the value (not a
// TOML value). Does not check ranges or types: parse_config() reports those with the line.
std::string config_value_literal(const std::string& key, std::string_view user_text);

// What a form shows for a value literal: the content of a string ("\"a\\\"b\"" -> a"b), an
// array of numbers on one line ("[1, 3]" even when written over several lines), else the
// literal itself. A literal that is not a TOML value is returned unchanged.
std::string config_literal_display(std::string_view literal);

// "" when `text` is well-formed TOML within the limits parse_config() enforces (docs/limits.md),
// else the parser's or the limit's message with line and column ("line 3, column 7:
// ...") — for deciding whether a text can be read as a whole.
std::string toml_syntax_error(std::string_view text);

}  // namespace moebench

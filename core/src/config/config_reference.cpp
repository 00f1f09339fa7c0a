// config_reference_markdown(): the schema's sections and keys as Markdown lines of at most
// 100 columns, so the generated page reads like the hand-written ones in docs/.
#include "moebench/config/config_reference.h"

#include <cctype>
#include <sstream>
#include <vector>

#include "config_detail.h"

namespace moebench {
namespace {

using namespace config_detail;

constexpr size_t kWidth = 100;

// `text` with Markdown's emphasis, HTML and escape characters escaped outside code spans, so a
// doc string such as "ffn_mult * hidden" or "<out_dir>/<name>/" renders as written.
std::string escape_markdown(const std::string& text) {
  std::string out;
  bool code = false;
  for (char ch : text) {
    if (ch == '`') code = !code;
    if (!code && (ch == '*' || ch == '<' || ch == '\\')) out += '\\';
    out += ch;
  }
  return out;
}

// A word that would start a list, a heading or a quote at the start of a line.
bool opens_a_block(const std::string& word) {
  if (word == "-" || word == "+" || word == "*" || word == "=" || word.starts_with('#') || word.starts_with('>'))
    return true;
  size_t digits = 0;
  while (digits < word.size() && std::isdigit((unsigned char)word[digits])) ++digits;
  return digits > 0 && digits + 1 == word.size() && (word.back() == '.' || word.back() == ')');
}

// `text` wrapped at kWidth columns; lines after the first start with `indent`. A word that
// would open a block at the start of a line takes the word before it along.
std::string wrap(const std::string& text, const std::string& indent) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::string out;
  std::vector<std::string> line;  // words of the line being filled
  size_t width = 0;               // its columns, indent included when not the first line
  bool first = true;
  auto emit = [&](size_t count) {  // the first `count` words of `line` as one output line
    std::string text = first ? "" : indent;
    for (size_t i = 0; i < count; ++i) text += (i ? " " : "") + line[i];
    out += text + "\n";
    line.erase(line.begin(), line.begin() + (long)count);
    first = false;
    width = indent.size();
    for (size_t i = 0; i < line.size(); ++i) width += (i ? 1 : 0) + line[i].size();
  };
  for (const std::string& w : words) {
    if (!line.empty() && width + 1 + w.size() > kWidth) emit(line.size() - (opens_a_block(w) && line.size() > 1 ? 1 : 0));
    width += (line.empty() ? 0 : 1) + w.size();
    line.push_back(w);
  }
  if (!line.empty() || first) emit(line.size());
  return out;
}

// The default as config_to_toml writes it; moe.experts, expanded per MoE block when loaded,
// shows the count every block gets when it is not given.
std::string default_text(const FieldDef& f) {
  if (f.kind == Kind::Experts) return std::to_string(kDefaultExperts);
  return value_text(f, Config{});
}

}  // namespace

std::string config_reference_markdown() {
  std::string out = "# Configuration reference\n\n";
  out += wrap(
      "Generated from the schema the loader reads (`core/src/config/config_schema.cpp`) by `moebench validate "
      "--doc`; do not edit it by hand: `tst_config_doc` fails when this page differs from that output. "
      "Regenerate with `build/release/cli/moebench validate --doc > docs/configuration.md`.",
      "");
  out += "\n";
  out += wrap(
      "A config is TOML. Every key has a default, so a config names only what it changes; `--set "
      "section.key=value` overrides any key from the command line (`--set moe.moe_layers=[1,3]`). Relative paths "
      "(type path) are resolved against the config file's folder, or the current directory for `--set`. "
      "`moebench validate CONFIG` prints every key with its resolved value, `--json` as canonical JSON. How the "
      "keys work together (cluster files, data, checkpoints): [config-guide.md](config-guide.md); every limit on "
      "values and files: [limits.md](limits.md).",
      "");
  std::string section;
  for (const FieldDef& f : fields()) {
    if (section != f.section) {
      section = f.section;
      out += "\n## `[" + section + "]`\n\n";
      if (const std::string doc = section_doc(section); !doc.empty()) out += wrap(escape_markdown(doc), "") + "\n";
    }
    out += wrap("- `" + f.name() + "` = `" + default_text(f) + "` (" + kind_name(f.kind) + "): " +
                    escape_markdown(f.doc),
                "  ");
  }
  return out;
}

}  // namespace moebench

// ctest-labels: unit
// Editing one key of a config's TOML text (config_text_edit.h): replace / insert / new section,
// comments and every other byte kept, strings with quotes and backslashes, arrays, the edited
// text parses to the new value, and clear messages for bad keys and bad values.
#include <QtTest>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/config/config_loader.h"
#include "moebench/config/config_text_edit.h"

using namespace moebench;

namespace {

std::string s(const QString& q) { return q.toStdString(); }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// The message of the std::invalid_argument `f` throws ("" when it does not throw).
template <class F>
std::string invalid_argument_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

// `key` in backticks, as the messages name keys.
std::string quoted(const std::string& key) {
  std::string q(1, '`');
  q += key;
  q += '`';
  return q;
}

const std::string kSamples = MOEBENCH_SOURCE_DIR "/sample_configs";
const std::string kQuickstart = kSamples + "/quickstart.toml";

}  // namespace

class TestConfigTextEdit : public QObject {
  Q_OBJECT

 private slots:
  void set_value_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("literal");
    QTest::addColumn<QString>("expected");
    // Replace.
    QTest::newRow("replace") << "[moe]\ntop_k = 2\n" << "moe.top_k" << "1" << "[moe]\ntop_k = 1\n";
    QTest::newRow("replace keeps comment")
        << "[moe]\ncapacity_factor = 0.0   # dropless\n" << "moe.capacity_factor" << "1.25"
        << "[moe]\ncapacity_factor = 1.25   # dropless\n";
    QTest::newRow("replace keeps spacing") << "[train]\n  lr=3e-3\n" << "train.lr" << " 1e-3 "
                                           << "[train]\n  lr=1e-3\n";
    QTest::newRow("replace in the right section")
        << "[run]\nname = \"a\"\n[strategy]\nname = \"expert_centric\"\n" << "strategy.name"
        << "\"janus\"" << "[run]\nname = \"a\"\n[strategy]\nname = \"janus\"\n";
    QTest::newRow("replace dotted top-level") << "run.name = \"a\"\n" << "run.name" << "\"b\""
                                              << "run.name = \"b\"\n";
    QTest::newRow("replace quoted key") << "[run]\n\"seed\" = 5 # s\n" << "run.seed" << "6"
                                        << "[run]\n\"seed\" = 6 # s\n";
    QTest::newRow("replace multi-line array")
        << "[moe]\nmoe_layers = [\n  1,  # first ]\n  3,\n]  # blocks\ntop_k = 2\n" << "moe.moe_layers"
        << "[0, 2]" << "[moe]\nmoe_layers = [0, 2]  # blocks\ntop_k = 2\n";
    QTest::newRow("replace string with # and quotes")
        << "[run]\nname = \"a # \\\" b\" # c\n" << "run.name" << "\"x\"" << "[run]\nname = \"x\" # c\n";
    QTest::newRow("replace crlf") << "[moe]\r\ntop_k = 2\r\n" << "moe.top_k" << "1"
                                  << "[moe]\r\ntop_k = 1\r\n";
    QTest::newRow("replace in inline table") << "model = { hidden = 64, heads = 4 }\n" << "model.heads"
                                             << "2" << "model = { hidden = 64, heads = 2 }\n";
    // Insert after the section's last key.
    QTest::newRow("insert after last key")
        << "[run]\nname = \"a\"  # n\n\n# the model\n[moe]\ntop_k = 2\n" << "run.seed" << "5"
        << "[run]\nname = \"a\"  # n\nseed = 5\n\n# the model\n[moe]\ntop_k = 2\n";
    QTest::newRow("insert after a multi-line value")
        << "[run]\nname = \"\"\"\nseed = 1\n[moe]\n\"\"\"\n" << "run.seed" << "7"
        << "[run]\nname = \"\"\"\nseed = 1\n[moe]\n\"\"\"\nseed = 7\n";
    QTest::newRow("insert keeps indentation") << "[train]\n  lr = 1e-3\n" << "train.steps" << "10"
                                              << "[train]\n  lr = 1e-3\n  steps = 10\n";
    QTest::newRow("insert under bare header") << "[train]  # training\n# later\n" << "train.steps"
                                              << "10" << "[train]  # training\nsteps = 10\n# later\n";
    QTest::newRow("insert, no final newline") << "[train]\nlr = 1e-3" << "train.steps" << "10"
                                              << "[train]\nlr = 1e-3\nsteps = 10\n";
    QTest::newRow("insert, header without newline") << "[train]" << "train.steps" << "10"
                                                    << "[train]\nsteps = 10\n";
    QTest::newRow("insert top-level dotted")
        << "run.name = \"a\"\n\n[moe]\ntop_k = 2\n" << "run.seed" << "5"
        << "run.name = \"a\"\nrun.seed = 5\n\n[moe]\ntop_k = 2\n";
    QTest::newRow("insert into inline table") << "model = { hidden = 64 }\n" << "model.heads" << "4"
                                              << "model = { hidden = 64, heads = 4 }\n";
    QTest::newRow("insert into empty inline table") << "model = {}\n" << "model.heads" << "4"
                                                    << "model = { heads = 4 }\n";
    QTest::newRow("insert crlf") << "[train]\r\nlr = 1e-3\r\n" << "train.steps" << "10"
                                 << "[train]\r\nlr = 1e-3\r\nsteps = 10\r\n";
    // A new section at the end.
    QTest::newRow("new section, empty text") << "" << "moe.top_k" << "1" << "[moe]\ntop_k = 1\n";
    QTest::newRow("new section") << "[run]\nname = \"a\"\n" << "moe.top_k" << "1"
                                 << "[run]\nname = \"a\"\n\n[moe]\ntop_k = 1\n";
    QTest::newRow("new section, no final newline") << "[run]\nname = \"a\"" << "moe.top_k" << "1"
                                                   << "[run]\nname = \"a\"\n\n[moe]\ntop_k = 1\n";
    QTest::newRow("new section after blank line") << "[run]\nname = \"a\"\n\n" << "moe.top_k" << "1"
                                                  << "[run]\nname = \"a\"\n\n[moe]\ntop_k = 1\n";
    QTest::newRow("new section, subtable only")
        << "[moe.extra]\nx = 1\n" << "moe.top_k" << "1" << "[moe.extra]\nx = 1\n\n[moe]\ntop_k = 1\n";
    QTest::newRow("new section crlf") << "[run]\r\nname = \"a\"\r\n" << "moe.top_k" << "1"
                                      << "[run]\r\nname = \"a\"\r\n\r\n[moe]\r\ntop_k = 1\r\n";
    // Option sections of a strategy ([strategy.<name>], two parts deep).
    QTest::newRow("nested: replace under its header")
        << "[strategy]\nname = \"janus\"\n[strategy.data_centric]\ncredits = 2\n" << "strategy.data_centric.credits" << "3"
        << "[strategy]\nname = \"janus\"\n[strategy.data_centric]\ncredits = 3\n";
    QTest::newRow("nested: replace dotted under the parent")
        << "[strategy]\ndata_centric.credits = 2\n" << "strategy.data_centric.credits" << "4"
        << "[strategy]\ndata_centric.credits = 4\n";
    QTest::newRow("nested: insert next to a dotted key")
        << "[strategy]\nname = \"janus\"\ndata_centric.credits = 2\n" << "strategy.data_centric.prefetch" << "true"
        << "[strategy]\nname = \"janus\"\ndata_centric.credits = 2\ndata_centric.prefetch = true\n";
    QTest::newRow("nested: insert into the parent's inline table")
        << "strategy = { name = \"janus\" }\n" << "strategy.janus.threshold" << "0.5"
        << "strategy = { name = \"janus\", janus.threshold = 0.5 }\n";
    QTest::newRow("nested: replace in a nested inline table")
        << "strategy = { data_centric = { credits = 2 } }\n" << "strategy.data_centric.credits" << "5"
        << "strategy = { data_centric = { credits = 5 } }\n";
    QTest::newRow("nested: new section after the parent")
        << "[strategy]\nname = \"hier_a2a\"\n" << "strategy.hier_a2a.overlap_degree" << "2"
        << "[strategy]\nname = \"hier_a2a\"\n\n[strategy.hier_a2a]\noverlap_degree = 2\n";
  }

  void set_value() {
    QFETCH(QString, text);
    QFETCH(QString, key);
    QFETCH(QString, literal);
    QFETCH(QString, expected);
    const std::string out = set_config_value(s(text), s(key), s(literal));
    QCOMPARE(QString::fromStdString(out), expected);
    // Read back through the same scanner: the literal as written (trimmed).
    const auto back = get_config_value(out, s(key));
    QVERIFY(back.has_value());
    QCOMPARE(QString::fromStdString(*back), literal.trimmed());
  }

  // Every edit of the real quickstart config changes one line (replace) or adds one line
  // (insert) or appends a section, leaves every other byte alone, and parses to the new value.
  void quickstart_edits_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("user");     // what a person types into the form
    QTest::addColumn<QString>("json");     // the resolved value, as config_to_json dumps it
    QTest::addColumn<int>("added_lines");  // 0 = replaced in place
    QTest::newRow("moe.top_k") << "moe.top_k" << "1" << "1" << 0;
    QTest::newRow("moe.capacity_factor, comment kept") << "moe.capacity_factor" << "1.5" << "1.5" << 0;
    QTest::newRow("train.lr") << "train.lr" << "1e-3" << "0.001" << 0;
    QTest::newRow("train.batch_size, comment kept") << "train.batch_size" << "32" << "32" << 0;
    QTest::newRow("model.heads") << "model.heads" << "8" << "8" << 0;
    QTest::newRow("strategy.name") << "strategy.name" << "hier_a2a" << "\"hier_a2a\"" << 0;
    QTest::newRow("run.name") << "run.name" << "my \"first\" run" << "\"my \\\"first\\\" run\"" << 0;
    QTest::newRow("moe.moe_layers") << "moe.moe_layers" << "0, 2" << "[0,2]" << 0;
    QTest::newRow("moe.experts per block") << "moe.experts" << "4, 8" << "[4,8]" << 0;
    QTest::newRow("insert train.min_lr_ratio") << "train.min_lr_ratio" << "0.25" << "0.25" << 1;
    QTest::newRow("insert model.tied_head") << "model.tied_head" << "False" << "false" << 1;
    QTest::newRow("new section store.experiment") << "store.experiment" << "ablation" << "\"ablation\"" << 3;
    QTest::newRow("new section emulate.time_scale, a word") << "emulate.time_scale" << "auto" << "\"auto\"" << 3;
  }

  void quickstart_edits() {
    QFETCH(QString, key);
    QFETCH(QString, user);
    QFETCH(QString, json);
    QFETCH(int, added_lines);
    const std::string text = read_text(kQuickstart);
    QVERIFY2(!text.empty(), kQuickstart.c_str());
    const std::string literal = config_value_literal(s(key), s(user));
    const std::string out = set_config_value(text, s(key), literal);

    const auto before = lines_of(text), after = lines_of(out);
    QCOMPARE(int(after.size()), int(before.size()) + added_lines);
    const auto loc = find_config_value(out, s(key));
    QVERIFY(loc.has_value());
    QCOMPARE(loc->literal, literal);
    const int edited = loc->line - 1;  // 0-based line of the key
    if (added_lines == 0) {
      // Exactly the value's bytes changed: same prefix, same suffix.
      const auto old = find_config_value(text, s(key));
      QVERIFY(old.has_value());
      QCOMPARE(old->line, loc->line);
      QCOMPARE(out.substr(0, loc->begin), text.substr(0, old->begin));
      QCOMPARE(out.substr(loc->end), text.substr(old->end));
      for (size_t i = 0; i < before.size(); ++i)
        if (int(i) != edited) QCOMPARE(after[i], before[i]);
    } else {
      QVERIFY(!find_config_value(text, s(key)).has_value());
      // Removing the added lines gives the original text back.
      std::vector<std::string> without = after;
      const int first = added_lines == 1 ? edited : edited - 2;  // new section: blank, header, key
      without.erase(without.begin() + first, without.begin() + first + added_lines);
      QCOMPARE(without, before);
    }
    Config c;
    try {
      c = parse_config(out, "quickstart.toml", {}, kSamples);
    } catch (const ConfigError& e) {
      QFAIL(e.what());
    }
    const std::string dotted = s(key);
    const auto dot = dotted.find('.');
    const nlohmann::json j = config_to_json(c)[dotted.substr(0, dot)][dotted.substr(dot + 1)];
    QCOMPARE(QString::fromStdString(j.dump()), json);
  }

  void string_literals_data() {
    QTest::addColumn<QString>("user");
    QTest::addColumn<QString>("literal");
    QTest::newRow("plain") << "quickstart" << "\"quickstart\"";
    QTest::newRow("quotes") << "say \"hi\"" << "\"say \\\"hi\\\"\"";
    QTest::newRow("backslashes") << "C:\\runs\\a" << "\"C:\\\\runs\\\\a\"";
    QTest::newRow("tab and newline") << "a\tb\nc" << "\"a\\tb\\nc\"";
    QTest::newRow("hash and brackets") << "x # [y] = 'z'" << "\"x # [y] = 'z'\"";
    QTest::newRow("empty") << "" << "\"\"";
    QTest::newRow("unicode") << QString::fromUtf8("m\xc3\xa9lange") << QString::fromUtf8("\"m\xc3\xa9lange\"");
  }

  void string_literals() {
    QFETCH(QString, user);
    QFETCH(QString, literal);
    const std::string lit = config_value_literal("run.out_dir", s(user));
    QCOMPARE(QString::fromStdString(lit), literal);
    QCOMPARE(QString::fromStdString(config_literal_display(lit)), user);
    const std::string text =
        set_config_value("[run]\nout_dir = \"old\"  # where\nseed = 1\n", "run.out_dir", lit);
    QCOMPARE(QString::fromStdString(text), "[run]\nout_dir = " + literal + "  # where\nseed = 1\n");
    if (user.isEmpty()) return;  // an empty out_dir is rejected by the validator
    try {
      QCOMPARE(QString::fromStdString(parse_config(text, "t.toml").run.out_dir), user);
    } catch (const ConfigError& e) {
      QFAIL(e.what());
    }
  }

  void typed_literals_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("user");
    QTest::addColumn<QString>("literal");
    QTest::newRow("integer trimmed") << "model.hidden" << "  256 " << "256";
    QTest::newRow("float exponent") << "train.lr" << "1e-3" << "1e-3";
    QTest::newRow("boolean any case") << "model.tied_head" << "TRUE" << "true";
    QTest::newRow("array as list") << "moe.moe_layers" << "1, 3" << "[1, 3]";
    QTest::newRow("array as array") << "moe.moe_layers" << "[1,3]" << "[1,3]";
    QTest::newRow("array one entry") << "moe.moe_layers" << "2" << "[2]";
    QTest::newRow("array empty") << "moe.moe_layers" << "" << "[]";
    QTest::newRow("experts scalar") << "moe.experts" << "4" << "4";
    QTest::newRow("experts list") << "moe.experts" << "4, 8" << "[4, 8]";
    QTest::newRow("path quoted") << "data.path" << "data/tiny shakespeare.txt"
                                 << "\"data/tiny shakespeare.txt\"";
  }

  void typed_literals() {
    QFETCH(QString, key);
    QFETCH(QString, user);
    QFETCH(QString, literal);
    QCOMPARE(QString::fromStdString(config_value_literal(s(key), s(user))), literal);
  }

  void display() {
    QCOMPARE(config_literal_display("[\n  1,  # one\n  3,\n]"), std::string("[1, 3]"));
    QCOMPARE(config_literal_display("\"a\\\"b\\\\c\""), std::string("a\"b\\c"));
    QCOMPARE(config_literal_display("'C:\\x'"), std::string("C:\\x"));
    QCOMPARE(config_literal_display("1e-3"), std::string("1e-3"));
    QCOMPARE(config_literal_display("[1, 2"), std::string("[1, 2"));  // not a value: as written
  }

  void find_in_quickstart() {
    const std::string text = read_text(kQuickstart);
    const auto lines = lines_of(text);
    int top_k_line = 0;
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].rfind("top_k", 0) == 0) top_k_line = int(i) + 1;
    QVERIFY(top_k_line > 0);
    const auto loc = find_config_value(text, "moe.top_k");
    QVERIFY(loc.has_value());
    QCOMPARE(loc->line, top_k_line);
    QCOMPARE(loc->literal, std::string("2"));
    QCOMPARE(*get_config_value(text, "moe.moe_layers"), std::string("[1, 3]"));
    QCOMPARE(*get_config_value(text, "run.name"), std::string("\"quickstart\""));
    QVERIFY(!get_config_value(text, "store.db").has_value());
    QCOMPARE(toml_syntax_error(text), std::string());
    const std::string broken = toml_syntax_error("[moe]\ntop_k = \n");
    QVERIFY2(broken.find("line 2") != std::string::npos, broken.c_str());
  }

  void bad_key_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("expect");  // must appear in the message besides the key
    QTest::newRow("typo") << "moe.topk" << "did you mean `moe.top_k`";
    QTest::newRow("no section") << "top_k" << "";
    QTest::newRow("unknown section") << "optim.lr" << "unknown config key";
    QTest::newRow("empty") << "" << "unknown config key";
  }

  void bad_key() {
    QFETCH(QString, key);
    QFETCH(QString, expect);
    const std::string text = "[moe]\ntop_k = 2\n";
    for (const std::string& msg :
         {invalid_argument_of([&] { set_config_value(text, s(key), "1"); }),
          invalid_argument_of([&] { get_config_value(text, s(key)); }),
          invalid_argument_of([&] { config_value_literal(s(key), "1"); })}) {
      QVERIFY2(!msg.empty(), "no std::invalid_argument");
      QVERIFY2(msg.find(quoted(s(key))) != std::string::npos, msg.c_str());
      QVERIFY2(msg.find(s(expect)) != std::string::npos, msg.c_str());
    }
  }

  void bad_value_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("literal");
    QTest::addColumn<QString>("expect");
    QTest::newRow("bare word") << "moe.top_k" << "two" << "`two` is not a TOML value";
    QTest::newRow("two values") << "moe.top_k" << "1 2" << "`1 2` is not one TOML value";
    QTest::newRow("trailing comment") << "moe.top_k" << "1 # one" << "not one TOML value";
    QTest::newRow("open array") << "moe.moe_layers" << "[1, 2" << "`[1, 2` is not a TOML value";
    QTest::newRow("open string") << "run.name" << "\"abc" << "`\"abc` is not a TOML value";
    QTest::newRow("empty") << "train.lr" << "  " << "empty value";
    QTest::newRow("two lines") << "train.lr" << "1\nsteps = 2" << "one line";
    QTest::newRow("nested 64 deep") << "moe.moe_layers" << QString("[").repeated(64) + QString("]").repeated(64)
                                    << "a value nested 65 levels deep";
    QTest::newRow("40-part key inside") << "moe.experts" << "{" + QString("a.").repeated(39) + "a = 1}"
                                        << "has 40 dotted parts; the limit is 32";
  }

  void bad_value() {
    QFETCH(QString, key);
    QFETCH(QString, literal);
    QFETCH(QString, expect);
    const std::string msg =
        invalid_argument_of([&] { set_config_value("[moe]\ntop_k = 2\n", s(key), s(literal)); });
    QVERIFY2(!msg.empty(), "no std::invalid_argument");
    QVERIFY2(msg.find(quoted(s(key))) != std::string::npos, msg.c_str());
    QVERIFY2(msg.find(s(expect)) != std::string::npos, msg.c_str());
    if (!key.startsWith("run.")) {  // typed into a form: the same check
      const std::string typed = invalid_argument_of([&] { config_value_literal(s(key), s(literal)); });
      QVERIFY2(typed.find(quoted(s(key))) != std::string::npos, typed.c_str());
    }
  }

  void over_the_limits() {
    // toml++ is not given texts over the limits of parse_config (docs/limits.md).
    std::string deep_key = "a";
    for (int i = 1; i < 40000; ++i) deep_key += ".a";
    const std::string err = toml_syntax_error("[model]\n" + deep_key + " = 1\n");
    QVERIFY2(err.rfind("line 2, column 1: key `a.a.a", 0) == 0 && err.find("has 40000 dotted parts") != std::string::npos,
             err.c_str());
    QVERIFY(toml_syntax_error(std::string((1 << 20) + 1, '#')).find("the limit is 1048576 bytes") != std::string::npos);
    // The scan looks into an inline table only where config keys can be (`run = { ... }`): a deep
    // one is skipped in one pass, not walked level by level.
    std::string nested;
    for (int i = 0; i < 50000; ++i) nested += "a = {";
    nested += "b = 1" + std::string(50000, '}');
    const std::string text = "run = { " + nested + " }\n";
    QVERIFY(!get_config_value(text, "run.name").has_value());
    const std::string edited = set_config_value(text, "run.name", "\"x\"");
    QCOMPARE(*get_config_value(edited, "run.name"), std::string("\"x\""));
    QCOMPARE(config_literal_display("{ " + nested + " }"), "{ " + nested + " }");  // as written
  }

  void section_written_as_value() {
    const std::string msg = invalid_argument_of([] { set_config_value("# m\nmodel = 5\n", "model.heads", "4"); });
    QVERIFY2(msg.find("line 2") != std::string::npos && msg.find("`model.heads`") != std::string::npos,
             msg.c_str());
  }
};

QTEST_MAIN(TestConfigTextEdit)
#include "tst_config_text_edit.moc"

// ctest-labels: unit
// The generated configuration reference: docs/configuration.md is exactly what `moebench
// validate --doc` prints (else this names the first differing line and the command that
// regenerates the page), every key of the schema is in it with the type the schema gives and
// the default `moebench validate` resolves, and its Markdown renders the doc strings as written.
#include <QtTest>

#include <QFile>
#include <QMap>
#include <QRegularExpression>

#include "moebench/config/config_loader.h"
#include "cli_support.h"

using namespace Qt::StringLiterals;

namespace {

using moebench::test::run_cli;

const QString kRegenerate = u"regenerate it: build/release/cli/moebench validate --doc > docs/configuration.md"_s;

QString generated() {
  const auto r = run_cli({u"validate"_s, u"--doc"_s});
  if (r.code != 0) qFatal("moebench validate --doc exited %d: %s", r.code, qPrintable(r.err));
  return r.out;
}

// "section.key" -> value, from `moebench validate`'s TOML: "[section]" headers (commented out for
// strategies the config does not run) and "key = value  # doc" lines.
QMap<QString, QString> resolved(const QStringList& sets) {
  QTemporaryDir dir;
  const QString config = moebench::test::write_file(dir, u"empty.toml"_s, "");
  QStringList args{u"validate"_s, config};
  for (const QString& s : sets) args << u"--set"_s << s;
  const auto r = run_cli(args);
  if (r.code != 0) qFatal("moebench validate exited %d: %s", r.code, qPrintable(r.err));
  static const QRegularExpression header(u"^(?:# )?\\[([a-z_.0-9]+)\\]"_s);
  static const QRegularExpression entry(u"^(?:# )?([a-z_0-9]+) = (.*?)\\s+# "_s);
  QMap<QString, QString> values;
  QString section;
  for (const QString& line : r.out.split(u'\n')) {
    if (const auto m = header.match(line); m.hasMatch()) section = m.captured(1);
    else if (const auto e = entry.match(line); e.hasMatch()) values[section + u'.' + e.captured(1)] = e.captured(2);
  }
  return values;
}

struct Item {
  QString value, type;
};

// "section.key" -> default and type, from the reference's "- `key` = `default` (type): doc" items.
QMap<QString, Item> reference_items(const QString& text) {
  static const QRegularExpression item(u"^- `([a-z_0-9.]+)` = `(.*?)` \\(([a-z ]+)\\): "_s,
                                       QRegularExpression::MultilineOption);
  QMap<QString, Item> items;
  for (auto it = item.globalMatch(text); it.hasNext();) {
    const auto m = it.next();
    items[m.captured(1)] = {m.captured(2), m.captured(3)};
  }
  return items;
}

}  // namespace

class TestConfigDoc : public QObject {
  Q_OBJECT

 private slots:
  void docs_page_is_the_generated_reference() {
    QFile f(QStringLiteral(MOEBENCH_SOURCE_DIR "/docs/configuration.md"));
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(u"docs/configuration.md is missing; "_s + kRegenerate));
    const QStringList page = QString::fromUtf8(f.readAll()).split(u'\n');
    const QStringList want = generated().split(u'\n');
    for (qsizetype i = 0; i < std::max(page.size(), want.size()); ++i) {
      const QString have = i < page.size() ? page[i] : u"<end of file>"_s;
      const QString gen = i < want.size() ? want[i] : u"<end of output>"_s;
      QVERIFY2(have == gen, qPrintable(u"docs/configuration.md differs from `moebench validate --doc` at line %1:\n"
                                       "  file:      %2\n  generated: %3\n"_s.arg(i + 1).arg(have, gen) +
                                       kRegenerate));
    }
  }

  void every_key_with_its_type_and_resolved_default() {
    const QMap<QString, Item> items = reference_items(generated());
    QCOMPARE(items.size(), qsizetype(moebench::config_keys().size()));
    const QMap<QString, QString> defaults = resolved({});
    for (const auto& key : moebench::config_keys()) {
      const QString name = QString::fromStdString(key.name);
      QVERIFY2(items.contains(name), qPrintable(name + u" is not in the reference"_s));
      QCOMPARE(items[name].type, QString::fromStdString(key.type));
      if (name == u"moe.experts"_s) continue;  // expanded per MoE block: below
      QVERIFY2(defaults.contains(name), qPrintable(name + u" is not in validate's output"_s));
      QVERIFY2(items[name].value == defaults[name],
               qPrintable(name + u": reference default "_s + items[name].value + u", validate resolves "_s +
                          defaults[name]));
    }
    // A block named in moe.moe_layers without moe.experts gets the reference's default.
    QCOMPARE(u"["_s + items[u"moe.experts"_s].value + u"]"_s, resolved({u"moe.moe_layers=[1]"_s})[u"moe.experts"_s]);
  }

  void markdown_renders_the_doc_strings_as_written() {
    const QString text = generated();
    for (const QString& line : text.split(u'\n')) QVERIFY2(line.size() <= 100, qPrintable(u"too long: "_s + line));
    // "*" and "<" would be emphasis and HTML; inside code spans they stay as they are.
    QVERIFY(text.contains(u"ffn_mult \\* hidden"_s));
    QVERIFY(text.contains(u"\\<out_dir>/\\<name>/"_s));
    QVERIFY(text.contains(u"`[strategy.<name>]`"_s));
    // Every section of the schema has a heading, each once.
    for (const QString& section : {u"run"_s, u"cluster"_s, u"strategy.data_centric"_s, u"storage"_s})
      QCOMPARE(text.count(u"\n## `["_s + section + u"]`\n"_s), 1);
  }

  void doc_takes_no_config_and_validate_needs_one() {
    const auto with_config = run_cli({u"validate"_s, u"--doc"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml")});
    QVERIFY2(with_config.code == 2 && with_config.err.contains(u"config excludes --doc"_s), qPrintable(with_config.err));
    const auto none = run_cli({u"validate"_s});
    QVERIFY2(none.code == 2 && none.err.contains(u"config is required"_s), qPrintable(none.err));
  }
};

QTEST_GUILESS_MAIN(TestConfigDoc)
#include "tst_config_doc.moc"

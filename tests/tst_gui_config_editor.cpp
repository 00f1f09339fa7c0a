// ctest-labels: gui
// The config editor: its models under QAbstractItemModelTester (form fields, issues), the
// document (load/save byte-identical, CRLF, file errors), and the ConfigEditor widget on the
// real sample_configs/quickstart.toml: save unchanged -> same bytes, a form edit changes exactly
// one line of the raw text, typed mistakes are reported at their line and highlighted,
// clicking an issue moves the cursor there, fixing clears them, and it renders.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBlock>

#include "models/configdocument.h"
#include "models/configfieldsmodel.h"
#include "models/configissuesmodel.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/strategy_spec.h"
#include "widgets/configeditor.h"

namespace {

const QString kQuickstart = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");

QByteArray readBytes(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

bool writeBytes(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return false;
  return f.write(bytes) == bytes.size();
}

// 1-based line whose text starts with `start` (after indentation); 0 when none.
int lineStarting(const QString& text, const QString& start) {
  const QStringList lines = text.split(QLatin1Char('\n'));
  for (int i = 0; i < lines.size(); ++i)
    if (lines[i].trimmed().startsWith(start)) return i + 1;
  return 0;
}

QModelIndex valueIndex(ConfigFieldsModel* m, const QString& key) {
  return m->index(m->rowForKey(key), ConfigFieldsModel::ValueColumn);
}

// Selects `from` on a 1-based line of the editor and types `replacement` over it, as a person.
void typeOver(QPlainTextEdit* edit, int line, const QString& from, const QString& replacement) {
  const QTextBlock block = edit->document()->findBlockByNumber(line - 1);
  const int col = int(block.text().indexOf(from));
  QVERIFY2(col >= 0, qPrintable(block.text()));
  QTextCursor c(block);
  c.setPosition(block.position() + col);
  c.setPosition(block.position() + col + int(from.size()), QTextCursor::KeepAnchor);
  edit->setTextCursor(c);
  QTest::keyClicks(edit, replacement);
}

// The 1-based lines the editor highlights (extra selections).
QList<int> highlighted(QPlainTextEdit* edit) {
  QList<int> lines;
  for (const auto& sel : edit->extraSelections()) lines << sel.cursor.blockNumber() + 1;
  return lines;
}

}  // namespace

class TestGuiConfigEditor : public QObject {
  Q_OBJECT

 private slots:
  void fields_model() {
    ConfigFieldsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), ConfigFieldsModel::commonKeys().size());
    QCOMPARE(model.columnCount(), int(ConfigFieldsModel::ColumnCount));

    // Type and doc come from config_keys().
    const int topK = model.rowForKey(QStringLiteral("moe.top_k"));
    QVERIFY(topK >= 0);
    for (const auto& info : moebench::config_keys())
      if (info.name == "moe.top_k") {
        QCOMPARE(model.index(topK, ConfigFieldsModel::TypeColumn).data().toString(), QString::fromStdString(info.type));
        QCOMPARE(model.index(topK, ConfigFieldsModel::DocColumn).data().toString(), QString::fromStdString(info.doc));
      }

    // Not written: the default, shown as such.
    model.setText(QStringLiteral("# mine\n[moe]\ntop_k = 1\n"));
    const QModelIndex steps = valueIndex(&model, QStringLiteral("train.steps"));
    QCOMPARE(steps.data().toString(), QString::number(moebench::TrainConfig{}.steps));
    QCOMPARE(steps.data(ConfigFieldsModel::IsSetRole).toBool(), false);
    QCOMPARE(steps.data(ConfigFieldsModel::LineRole).toInt(), 0);
    QVERIFY(steps.data(Qt::FontRole).value<QFont>().italic());
    const QModelIndex k = valueIndex(&model, QStringLiteral("moe.top_k"));
    QCOMPARE(k.data().toString(), QStringLiteral("1"));
    QCOMPARE(k.data(ConfigFieldsModel::IsSetRole).toBool(), true);
    QCOMPARE(k.data(ConfigFieldsModel::LineRole).toInt(), 3);
    QVERIFY(model.flags(k) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(model.index(topK, ConfigFieldsModel::KeyColumn)) & Qt::ItemIsEditable));

    // Editing: the text changes, textEdited carries it.
    QSignalSpy edited(&model, &ConfigFieldsModel::textEdited);
    QVERIFY(model.setData(k, QStringLiteral("2")));
    QCOMPARE(edited.size(), 1);
    QCOMPARE(edited.at(0).at(0).toString(), QStringLiteral("# mine\n[moe]\ntop_k = 2\n"));
    QCOMPARE(model.text(), QStringLiteral("# mine\n[moe]\ntop_k = 2\n"));
    QVERIFY(model.setData(valueIndex(&model, QStringLiteral("run.name")), QStringLiteral("a \"b\"")));
    QCOMPARE(model.text(), QStringLiteral("# mine\n[moe]\ntop_k = 2\n\n[run]\nname = \"a \\\"b\\\"\"\n"));
    QCOMPARE(valueIndex(&model, QStringLiteral("run.name")).data().toString(), QStringLiteral("a \"b\""));
    QCOMPARE(valueIndex(&model, QStringLiteral("run.name")).data(ConfigFieldsModel::LineRole).toInt(), 6);
    // The shown default committed unchanged is not written into the text.
    QVERIFY(model.setData(steps, steps.data()));
    QCOMPARE(edited.size(), 2);
    QVERIFY(!model.text().contains(QStringLiteral("steps")));

    // A value that is not a TOML value: refused with a message naming key and value.
    QSignalSpy failed(&model, &ConfigFieldsModel::editFailed);
    QVERIFY(!model.setData(k, QStringLiteral("two")));
    QCOMPARE(failed.size(), 1);
    const QString msg = failed.at(0).at(0).toString();
    QVERIFY2(msg.contains(QStringLiteral("moe.top_k")) && msg.contains(QStringLiteral("two")), qPrintable(msg));
    QCOMPARE(edited.size(), 2);

    // Read-only: nothing editable.
    model.setReadOnly(true);
    QVERIFY(!(model.flags(k) & Qt::ItemIsEditable));
    QVERIFY(!model.setData(k, QStringLiteral("1")));
    model.setReadOnly(false);

    // strategy.name offers the registered strategies.
    QStringList names;
    for (const auto& n : moebench::strategy_names()) names << QString::fromStdString(n);
    QVERIFY(!names.isEmpty());
    QCOMPARE(valueIndex(&model, QStringLiteral("strategy.name")).data(ConfigFieldsModel::ChoicesRole).toStringList(), names);
    QVERIFY(k.data(ConfigFieldsModel::ChoicesRole).toStringList().isEmpty());

    // A resolved config gives the values of unwritten keys (experts expanded per block).
    const QString moe = QStringLiteral("[moe]\nmoe_layers = [1, 3]\n");
    const moebench::Config resolved = moebench::parse_config(moe.toStdString(), "t.toml");
    model.setText(moe, &resolved);
    QCOMPARE(valueIndex(&model, QStringLiteral("moe.experts")).data().toString(), QStringLiteral("[8, 8]"));
    QCOMPARE(valueIndex(&model, QStringLiteral("moe.moe_layers")).data().toString(), QStringLiteral("[1, 3]"));
  }

  void issues_model() {
    ConfigIssuesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    std::vector<moebench::ConfigIssue> issues;
    try {
      moebench::parse_config("[model]\nhidden = 64\nheads = 3\n[run]\nbogus = 1\n", "bad.toml");
      QFAIL("the config should not validate");
    } catch (const moebench::ConfigError& e) {
      issues = e.issues();
    }
    model.setIssues(issues);
    QCOMPARE(model.rowCount(), int(issues.size()));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.lineAt(0), 3);
    QCOMPARE(model.index(0, ConfigIssuesModel::LineColumn).data().toInt(), 3);
    QCOMPARE(model.index(0, ConfigIssuesModel::KeyColumn).data().toString(), QStringLiteral("model.heads"));
    QVERIFY(model.index(0, ConfigIssuesModel::MessageColumn).data().toString().contains(QStringLiteral("divide")));
    QCOMPARE(model.index(1, 0).data(ConfigIssuesModel::LineRole).toInt(), 5);
    QCOMPARE(model.index(1, ConfigIssuesModel::KeyColumn).data().toString(), QStringLiteral("run.bogus"));
    QVERIFY(model.index(1, 0).data(Qt::ToolTipRole).toString().startsWith(QStringLiteral("bad.toml:5: run.bogus")));
    model.setIssues({{"x.toml", 0, "moe.top_k", "no line"}});
    QCOMPARE(model.index(0, ConfigIssuesModel::LineColumn).data().toString(), QString());
    model.setIssues({});
    QCOMPARE(model.rowCount(), 0);
  }

  void document_load_save() {
    QTemporaryDir dir;
    ConfigDocument doc;
    QVERIFY2(doc.load(kQuickstart), qPrintable(doc.errorString()));
    QVERIFY(!doc.isDirty());
    QCOMPARE(doc.baseDir(), QFileInfo(kQuickstart).absolutePath());
    doc.validate();
    QVERIFY(doc.isValid());
    QVERIFY(doc.issues().empty());
    QVERIFY(doc.config());
    QCOMPARE(doc.config()->run.name, std::string("quickstart"));

    QSignalSpy dirty(&doc, &ConfigDocument::dirtyChanged);
    doc.setText(doc.text() + QStringLiteral("\n[store]\nspans_every = 0\n"));
    QVERIFY(doc.isDirty());
    QCOMPARE(dirty.size(), 1);
    doc.validate();
    QVERIFY(!doc.isValid());
    QVERIFY(!doc.hasSyntaxError());
    QCOMPARE(int(doc.issues().size()), 1);
    QCOMPARE(doc.issues()[0].key, std::string("store.spans_every"));
    QCOMPARE(doc.issues()[0].file, std::string("quickstart.toml"));
    doc.setText(QStringLiteral("[moe\n"));
    doc.validate();
    QVERIFY(doc.hasSyntaxError());

    // Relative data paths resolve against the file's folder, as `moebench run` does.
    QVERIFY(writeBytes(dir.filePath("corpus.txt"), QByteArray("hello world, a small text corpus\n").repeated(20)));
    const QByteArray textConfig = "[data]\nsource = \"text\"\npath = \"corpus.txt\"\n";
    QVERIFY(writeBytes(dir.filePath("text.toml"), textConfig));
    QVERIFY(doc.load(dir.filePath("text.toml")));
    doc.validate();
    QVERIFY2(doc.isValid(), doc.issues().empty() ? "" : doc.issues()[0].to_string().c_str());
    QCOMPARE(QString::fromStdString(doc.config()->data.path), QDir(dir.path()).absoluteFilePath("corpus.txt"));
    doc.setText(QString::fromUtf8(textConfig).replace(QStringLiteral("corpus.txt"), QStringLiteral("gone.txt")));
    doc.validate();
    QCOMPARE(int(doc.issues().size()), 1);
    QCOMPARE(doc.issues()[0].key, std::string("data.path"));
    QCOMPARE(doc.issues()[0].line, 3);

    // CRLF files come back byte-identical.
    const QByteArray crlf = "# c\r\n[moe]\r\ntop_k = 1\r\n";
    QVERIFY(writeBytes(dir.filePath("crlf.toml"), crlf));
    QVERIFY(doc.load(dir.filePath("crlf.toml")));
    QVERIFY(!doc.text().contains(QLatin1Char('\r')));
    QVERIFY(doc.save(dir.filePath("crlf-copy.toml")));
    QCOMPARE(readBytes(dir.filePath("crlf-copy.toml")), crlf);
    QCOMPARE(doc.filePath(), dir.filePath("crlf-copy.toml"));

    // Errors name the path and the reason; the document keeps its text.
    const QString before = doc.text();
    const QString missing = dir.filePath("missing.toml");
    QVERIFY(!doc.load(missing));
    QVERIFY2(doc.errorString().contains(missing) && doc.errorString().contains(QStringLiteral("no such file")),
             qPrintable(doc.errorString()));
    QVERIFY(writeBytes(dir.filePath("latin1.toml"), "name = \"caf\xe9\"\n"));
    QVERIFY(!doc.load(dir.filePath("latin1.toml")));
    QVERIFY2(doc.errorString().contains(QStringLiteral("UTF-8")), qPrintable(doc.errorString()));
    QVERIFY(!doc.load(dir.path()));
    QVERIFY2(doc.errorString().contains(QStringLiteral("folder")), qPrintable(doc.errorString()));
    const QString unwritable = dir.filePath("no/such/folder/x.toml");
    QVERIFY(!doc.save(unwritable));
    QVERIFY2(doc.errorString().contains(unwritable), qPrintable(doc.errorString()));
    QCOMPARE(doc.text(), before);
  }

  void editor_open_save_identical() {
    QTemporaryDir dir;
    ConfigEditor w;
    QAbstractItemModelTester fieldsTester(w.fieldsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester issuesTester(w.issuesModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY2(w.openFile(kQuickstart), qPrintable(w.errorText()));
    QCOMPARE(w.filePath(), QFileInfo(kQuickstart).absoluteFilePath());
    QCOMPARE(w.issuesModel()->rowCount(), 0);
    QVERIFY(!w.isModified());
    QCOMPARE(w.textEdit()->toPlainText(), w.text());
    QCOMPARE(valueIndex(w.fieldsModel(), QStringLiteral("run.name")).data().toString(), QStringLiteral("quickstart"));
    QCOMPARE(valueIndex(w.fieldsModel(), QStringLiteral("moe.moe_layers")).data().toString(), QStringLiteral("[1, 3]"));

    QSignalSpy saved(&w, &ConfigEditor::saved);
    const QString copy = dir.filePath("copy.toml");
    QVERIFY2(w.saveFile(copy), qPrintable(w.errorText()));
    QCOMPARE(saved.size(), 1);
    QCOMPARE(saved.at(0).at(0).toString(), copy);
    QCOMPARE(w.filePath(), copy);
    const QByteArray original = readBytes(kQuickstart);
    QVERIFY(!original.isEmpty());
    QCOMPARE(readBytes(copy), original);

    // File errors are shown with the path and the reason.
    const QString missing = dir.filePath("nope.toml");
    QVERIFY(!w.openFile(missing));
    QVERIFY2(w.errorText().contains(missing), qPrintable(w.errorText()));
    QCOMPARE(w.text(), QString::fromUtf8(original));  // still the open config
    const QString bad = dir.filePath("missing-folder/x.toml");
    QVERIFY(!w.saveFile(bad));
    QVERIFY2(w.errorText().contains(bad), qPrintable(w.errorText()));
    QCOMPARE(saved.size(), 1);
  }

  void form_edit_changes_one_line() {
    QTemporaryDir dir;
    ConfigEditor w;
    QAbstractItemModelTester tester(w.fieldsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFile(kQuickstart));
    const QStringList before = w.textEdit()->toPlainText().split(QLatin1Char('\n'));
    const int topKLine = lineStarting(w.text(), QStringLiteral("top_k"));
    QVERIFY(topKLine > 0);

    // Through the view's editor, as a person: edit, type, Enter.
    QTableView* view = w.formView();
    const QModelIndex idx = valueIndex(w.fieldsModel(), QStringLiteral("moe.top_k"));
    QCOMPARE(idx.data().toString(), QStringLiteral("2"));
    view->setCurrentIndex(idx);
    view->edit(idx);
    auto* line = view->viewport()->findChild<QLineEdit*>();
    QVERIFY(line);
    line->selectAll();
    QTest::keyClicks(line, QStringLiteral("1"));
    QTest::keyClick(line, Qt::Key_Return);  // the delegate commits from the event loop
    QTRY_VERIFY(w.text() != before.join(QLatin1Char('\n')));

    const QStringList after = w.textEdit()->toPlainText().split(QLatin1Char('\n'));
    QCOMPARE(after.size(), before.size());
    for (int i = 0; i < before.size(); ++i) {
      if (i == topKLine - 1) QCOMPARE(after[i], QStringLiteral("top_k = 1"));
      else QCOMPARE(after[i], before[i]);
    }
    QCOMPARE(w.text(), w.textEdit()->toPlainText());
    QVERIFY(w.isModified());
    QTRY_COMPARE(w.document()->config() ? w.document()->config()->moe.top_k : -1, 1);
    QCOMPARE(w.issuesModel()->rowCount(), 0);

    // One undo step restores the text.
    w.textEdit()->undo();
    QCOMPARE(w.textEdit()->toPlainText().split(QLatin1Char('\n')), before);

    // strategy.name is a combo of the registered strategies.
    const QModelIndex strategy = valueIndex(w.fieldsModel(), QStringLiteral("strategy.name"));
    view->setCurrentIndex(strategy);
    view->edit(strategy);
    auto* combo = view->viewport()->findChild<QComboBox*>();
    QVERIFY(combo);
    QCOMPARE(combo->currentText(), QStringLiteral("expert_centric"));
    const int hier = combo->findText(QStringLiteral("hier_a2a"));
    QVERIFY(hier >= 0);
    combo->setCurrentIndex(hier);
    emit combo->activated(hier);
    const int strategyLine = lineStarting(w.text(), QStringLiteral("name = \"hier_a2a\""));
    QVERIFY2(strategyLine > 0, qPrintable(w.text()));
    QCOMPARE(w.text().count(QStringLiteral("hier_a2a")), 2);  // the comment mentions it too

    // Saved edits reach the file.
    const QString path = dir.filePath("edited.toml");
    QVERIFY(w.saveFile(path));
    QCOMPARE(readBytes(path), w.text().toUtf8());
    QVERIFY(!w.isModified());
  }

  void typed_errors_are_highlighted() {
    ConfigEditor w;
    QAbstractItemModelTester tester(w.issuesModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFile(kQuickstart));
    QPlainTextEdit* edit = w.textEdit();
    QCOMPARE(w.issuesModel()->rowCount(), 0);
    QVERIFY(highlighted(edit).isEmpty());

    // heads = 3 with hidden = 64: reported at the heads line after the typing pause.
    const int headsLine = lineStarting(w.text(), QStringLiteral("heads"));
    QVERIFY(headsLine > 0);
    typeOver(edit, headsLine, QStringLiteral("4"), QStringLiteral("3"));
    QCOMPARE(w.issuesModel()->rowCount(), 0);  // not before the pause
    QTRY_COMPARE(w.issuesModel()->rowCount(), 1);
    QCOMPARE(w.issuesModel()->lineAt(0), headsLine);
    QCOMPARE(w.issuesModel()->index(0, ConfigIssuesModel::KeyColumn).data().toString(), QStringLiteral("model.heads"));
    QCOMPARE(highlighted(edit), QList<int>{headsLine});
    // The text still parses: the form follows it.
    QCOMPARE(valueIndex(w.fieldsModel(), QStringLiteral("model.heads")).data().toString(), QStringLiteral("3"));
    typeOver(edit, headsLine, QStringLiteral("3"), QStringLiteral("4"));
    QTRY_COMPARE(w.issuesModel()->rowCount(), 0);
    QVERIFY(highlighted(edit).isEmpty());

    // An unknown key typed on a new line N.
    const int seedLine = lineStarting(w.text(), QStringLiteral("seed"));
    QVERIFY(seedLine > 0);
    {
      QTextCursor c(edit->document()->findBlockByNumber(seedLine - 1));
      c.movePosition(QTextCursor::EndOfBlock);
      edit->setTextCursor(c);
    }
    QTest::keyClick(edit, Qt::Key_Return);
    QTest::keyClicks(edit, QStringLiteral("bogus = 1"));
    const int bogusLine = seedLine + 1;
    QTRY_COMPARE(w.issuesModel()->rowCount(), 1);
    QCOMPARE(w.issuesModel()->lineAt(0), bogusLine);
    QCOMPARE(w.issuesModel()->index(0, ConfigIssuesModel::KeyColumn).data().toString(), QStringLiteral("run.bogus"));
    QCOMPARE(highlighted(edit), QList<int>{bogusLine});

    // Clicking the issue moves the cursor to its line.
    edit->moveCursor(QTextCursor::Start);
    QCOMPARE(edit->textCursor().blockNumber(), 0);
    QTableView* issues = w.issuesView();
    const QModelIndex issue = w.issuesModel()->index(0, ConfigIssuesModel::MessageColumn);
    QTest::mouseClick(issues->viewport(), Qt::LeftButton, {}, issues->visualRect(issue).center());
    QCOMPARE(edit->textCursor().blockNumber(), bogusLine - 1);

    // Fixing it (deleting the line) clears the issues and the highlight.
    QTextCursor c = edit->textCursor();  // at the start of the bogus line: select "\nbogus = 1"
    c.movePosition(QTextCursor::PreviousCharacter);
    c.movePosition(QTextCursor::NextBlock, QTextCursor::KeepAnchor);
    c.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
    QCOMPARE(c.selectedText(), QString(QChar::ParagraphSeparator) + QStringLiteral("bogus = 1"));
    edit->setTextCursor(c);
    QTest::keyClick(edit, Qt::Key_Delete);
    QTRY_COMPARE(w.issuesModel()->rowCount(), 0);
    QVERIFY(highlighted(edit).isEmpty());
    QCOMPARE(w.text(), QString::fromUtf8(readBytes(kQuickstart)));

    // A syntax error: reported at its line; the form keeps the last values, read-only.
    const int topKLine = lineStarting(w.text(), QStringLiteral("top_k"));
    typeOver(edit, topKLine, QStringLiteral("2"), QStringLiteral("[2"));
    QTRY_COMPARE(w.issuesModel()->rowCount(), 1);
    QVERIFY(w.issuesModel()->lineAt(0) >= topKLine);
    QVERIFY(w.fieldsModel()->isReadOnly());
    QCOMPARE(valueIndex(w.fieldsModel(), QStringLiteral("moe.top_k")).data().toString(), QStringLiteral("2"));
    edit->undo();
    QTRY_COMPARE(w.issuesModel()->rowCount(), 0);
    QVERIFY(!w.fieldsModel()->isReadOnly());
  }

  void renders() {
    ConfigEditor w;
    QVERIFY(w.openFile(kQuickstart));
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QImage shot = w.grab().toImage();
    QVERIFY(!shot.isNull());
    QCOMPARE(shot.width(), w.width() * int(shot.devicePixelRatio()));
    // Not a blank image: the text and the form are drawn.
    QSet<QRgb> colors;
    for (int y = 0; y < shot.height(); y += 7)
      for (int x = 0; x < shot.width(); x += 7) colors.insert(shot.pixel(x, y));
    QVERIFY2(colors.size() > 4, qPrintable(QString::number(colors.size())));
  }
};

QTEST_MAIN(TestGuiConfigEditor)
#include "tst_gui_config_editor.moc"

#include "models/configdocument.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QStringDecoder>

#include <exception>

#include "moebench/config/config_text_edit.h"

namespace {

constexpr qint64 kMaxConfigBytes = 16 * 1024 * 1024;  // far above any real config

// True when the text has line breaks and every '\n' is preceded by '\r'.
bool allLinesCrlf(const QByteArray& bytes) {
  const qsizetype lf = bytes.count('\n');
  return lf > 0 && bytes.count("\r\n") == lf;
}

}  // namespace

ConfigDocument::ConfigDocument(QObject* parent) : QObject(parent) {}

void ConfigDocument::setText(const QString& text) {
  if (text == m_text) return;
  m_text = text;
  emit textChanged(m_text);
  setDirty(true);
}

void ConfigDocument::setDirty(bool dirty) {
  if (dirty == m_dirty) return;
  m_dirty = dirty;
  emit dirtyChanged(m_dirty);
}

bool ConfigDocument::load(const QString& path) {
  auto fail = [&](const QString& reason) {
    m_error = tr("Cannot open %1: %2").arg(QDir::toNativeSeparators(path), reason);
    return false;
  };
  const QFileInfo info(path);
  if (!info.exists()) return fail(tr("no such file"));
  if (info.isDir()) return fail(tr("it is a folder, not a file"));
  if (info.size() > kMaxConfigBytes)
    return fail(tr("the file has %1 bytes, too large for a config").arg(info.size()));
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return fail(file.errorString());
  const QByteArray bytes = file.readAll();
  if (file.error() != QFileDevice::NoError) return fail(file.errorString());
  QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
  QString text = decoder.decode(bytes);
  if (decoder.hasError()) return fail(tr("not UTF-8 text (TOML files are UTF-8)"));
  const bool crlf = allLinesCrlf(bytes);
  if (crlf) text.replace(QStringLiteral("\r\n"), QStringLiteral("\n"));

  m_error.clear();
  m_crlf = crlf;
  const QString absolute = info.absoluteFilePath();
  const bool pathChanged = absolute != m_path;
  m_path = absolute;
  if (text != m_text) {
    m_text = text;
    emit textChanged(m_text);
  }
  setDirty(false);
  if (pathChanged) emit filePathChanged(m_path);
  return true;
}

bool ConfigDocument::save(const QString& path) {
  auto fail = [&](const QString& reason) {
    m_error = tr("Cannot save %1: %2").arg(QDir::toNativeSeparators(path), reason);
    return false;
  };
  if (path.isEmpty()) return fail(tr("no file name given"));
  if (QFileInfo(path).isDir()) return fail(tr("it is a folder"));
  QString text = m_text;
  if (m_crlf) text.replace(QStringLiteral("\n"), QStringLiteral("\r\n"));
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return fail(file.errorString());
  const QByteArray bytes = text.toUtf8();
  if (file.write(bytes) != bytes.size()) {
    const QString why = file.errorString();
    file.cancelWriting();
    return fail(why);
  }
  if (!file.commit()) return fail(file.errorString());

  m_error.clear();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  const bool pathChanged = absolute != m_path;
  m_path = absolute;
  setDirty(false);
  if (pathChanged) emit filePathChanged(m_path);
  return true;
}

QString ConfigDocument::sourceName() const {
  return m_path.isEmpty() ? QStringLiteral("untitled.toml") : QFileInfo(m_path).fileName();
}

QString ConfigDocument::baseDir() const {
  return m_path.isEmpty() ? QDir::currentPath() : QFileInfo(m_path).absolutePath();
}

void ConfigDocument::validate() {
  const std::string text = m_text.toStdString();
  m_issues.clear();
  m_config.reset();
  m_syntaxError = QString::fromStdString(moebench::toml_syntax_error(text));
  try {
    m_config = moebench::parse_config(text, sourceName().toStdString(), {}, baseDir().toStdString());
  } catch (const moebench::ConfigError& e) {
    m_issues = e.issues();
  } catch (const std::exception& e) {  // e.g. a filesystem error while resolving data paths
    m_issues.push_back({sourceName().toStdString(), 0, "", e.what()});
  }
  emit validated();
}

void ConfigDocument::newDocument(const QString& text) {
  const bool pathChanged = !m_path.isEmpty();
  m_path.clear();
  m_crlf = false;
  m_text = text;
  setDirty(!text.isEmpty());
  emit textChanged(m_text);
  if (pathChanged) emit filePathChanged(m_path);
}

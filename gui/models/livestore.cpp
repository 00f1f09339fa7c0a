#include "models/livestore.h"

#include <QCoreApplication>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>

#include "moebench/store/run_store.h"

LiveStore::LiveStore(QObject* parent) : QObject(parent) {
  m_timer.setInterval(kDefaultIntervalMs);
  connect(&m_timer, &QTimer::timeout, this, [this] {
    if (!start() && m_inFlight) ++m_skipped;
  });
  connect(&m_watcher, &QFutureWatcher<Snapshot>::finished, this, &LiveStore::finished);
}

LiveStore::~LiveStore() { m_watcher.waitForFinished(); }

void LiveStore::setStore(const QString& path, std::shared_ptr<moebench::RunStore> store) {
  ++m_generation;
  m_again = false;
  m_path = path;
  m_store = std::move(store);
  m_lastError.clear();
  m_lastUpdate = m_path.isEmpty() ? QDateTime() : QDateTime::currentDateTime();  // the open read it
  if (m_live && !m_path.isEmpty()) m_timer.start();
  else m_timer.stop();
}

void LiveStore::setLive(bool on) {
  m_live = on;
  if (m_live && !m_path.isEmpty()) m_timer.start();
  else m_timer.stop();
}

void LiveStore::setInterval(int ms) { m_timer.setInterval(ms); }

bool LiveStore::refresh() {
  if (m_inFlight && !m_path.isEmpty()) m_again = true;
  return start();
}

bool LiveStore::start() {
  if (m_path.isEmpty() || m_inFlight) return false;
  m_inFlight = true;
  ++m_started;
  m_readGeneration = m_generation;
  m_watcher.setFuture(QtConcurrent::run(&LiveStore::read, m_path, m_store));
  return true;
}

LiveStore::Snapshot LiveStore::read(const QString& path, std::shared_ptr<moebench::RunStore> store) {
  Snapshot s;
  s.path = path;
  s.workerThread = QCoreApplication::instance() && QThread::currentThread() != QCoreApplication::instance()->thread();
  try {
    if (!store || !store->sees_later_commits())
      store = std::make_shared<moebench::RunStore>(path.toStdString(), moebench::RunStore::Mode::read_only);
    s.experiments = RunListModel::read(*store);
    s.store = std::move(store);
  } catch (const std::exception& e) {
    s.error = QString::fromUtf8(e.what());
  }
  s.finished = QDateTime::currentDateTime();
  return s;
}

void LiveStore::finished() {
  m_inFlight = false;
  Snapshot s = m_watcher.result();
  if (m_again) {
    m_again = false;
    start();
  }
  if (m_readGeneration != m_generation) return;  // the window opened another store meanwhile
  m_lastError = s.error;
  if (s.error.isEmpty()) {
    m_lastUpdate = s.finished;
    m_store = s.store;
  }
  emit refreshed(s);
}

QString LiveStore::ageText(qint64 msecs) {
  if (msecs < 0) return tr("not read yet");
  const qint64 s = msecs / 1000;
  if (s < 60) return tr("updated %1 s ago").arg(s);
  if (s < 3600) return tr("updated %1 min ago").arg(s / 60);
  return tr("updated %1 h ago").arg(s / 3600);
}

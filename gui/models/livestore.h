#pragma once
// LiveStore: keeps the GUI's picture of an open run store current while runs write to it, without
// blocking the GUI thread (issue 35: live runs).
//
// Every interval (default kDefaultIntervalMs) — or on refresh() — one read runs on a worker
// thread (QtConcurrent): RunListModel::read() of the whole store, through the connection the
// window opened when that connection sees later commits (a WAL reader: RunStore::
// sees_later_commits), else through a new read-only connection (a store read as a snapshot).
// A tick while a read is still going is skipped, never queued (refresh() queues one). The result comes back to the GUI
// thread as refreshed(Snapshot): the runs (RUNNING ones included, as soon as their row is
// committed), or the error of that read. An error does not stop the timer: the next tick reads
// again, and the error clears with the first read that succeeds.
//
// The window owns what it shows; LiveStore only reads. Destroying it waits for a read in flight.
#include <QDateTime>
#include <QFutureWatcher>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QTimer>

#include <memory>
#include <vector>

#include "models/runlistmodel.h"

namespace moebench {
class RunStore;
}

class LiveStore : public QObject {
  Q_OBJECT

 public:
  static constexpr int kDefaultIntervalMs = 2000;

  struct Snapshot {
    QString path;
    std::shared_ptr<moebench::RunStore> store;  // the connection the read used (null on error)
    std::vector<RunListModel::Experiment> experiments;
    QString error;       // empty: the read succeeded
    QDateTime finished;  // when the read ended
    bool workerThread = false;  // read on a thread other than the application's (GUI) thread
  };

  explicit LiveStore(QObject* parent = nullptr);
  ~LiveStore() override;

  // The store to follow (the window's open connection); an empty path stops following.
  void setStore(const QString& path, std::shared_ptr<moebench::RunStore> store);
  QString path() const { return m_path; }
  // Timer on/off (on by default once a store is set) and its period.
  void setLive(bool on);
  bool isLive() const { return m_live; }
  void setInterval(int ms);
  int interval() const { return m_timer.interval(); }
  // Starts a read now and returns true; without a store false. While one is in flight (started
  // and its result not yet handed over by refreshed()) it returns false and queues one more read
  // for when that one ends (an edit made meanwhile is then seen). Timer ticks never queue.
  bool refresh();
  bool isReading() const { return m_inFlight; }
  // When the last successful read ended (invalid before the first) and the last read's error.
  QDateTime lastUpdate() const { return m_lastUpdate; }
  QString lastError() const { return m_lastError; }
  int readsStarted() const { return m_started; }
  int ticksSkipped() const { return m_skipped; }
  // "updated 3 s ago" / "updated 2 min ago" for an age in milliseconds; "not read yet" when < 0.
  static QString ageText(qint64 msecs);

  // The read a refresh runs on the worker thread (public for tests): never throws.
  static Snapshot read(const QString& path, std::shared_ptr<moebench::RunStore> store);

 signals:
  void refreshed(const LiveStore::Snapshot& snapshot);

 private:
  void finished();

  QString m_path;
  std::shared_ptr<moebench::RunStore> m_store;
  QTimer m_timer;
  QFutureWatcher<Snapshot> m_watcher;
  bool m_live = true;
  QDateTime m_lastUpdate;
  QString m_lastError;
  int m_started = 0, m_skipped = 0;
  quint64 m_generation = 0;  // setStore() bumps it: a read of the previous store is dropped
  quint64 m_readGeneration = 0;
  bool m_inFlight = false;
  bool m_again = false;  // refresh() while in flight: read once more when it ends
  bool start();
};

Q_DECLARE_METATYPE(LiveStore::Snapshot)

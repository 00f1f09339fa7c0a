#pragma once
// Checks in suites that run under mpirun: each rank collects its mismatches (the first few, for
// the message) and AGREE(check) fails on every rank when any rank saw one, naming how many
// ranks failed and this rank's mismatches. Every rank must reach the same AGREE.
#include <QStringList>
#include <QtTest>

#include <mpi.h>

#include "moebench/dist/mpi_communicator.h"

namespace moebench::test {

struct Check {
  QStringList errors;
  int failures = 0;
  void expect(bool ok, const QString& what) {
    if (ok) return;
    if (++failures <= 8) errors << what;
  }
  int ranks_failed() const {
    int mine = failures ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return all;
  }
};

}  // namespace moebench::test

#define AGREE(chk)                                                                            \
  do {                                                                                        \
    int bad_ = (chk).ranks_failed();                                                          \
    QVERIFY2(bad_ == 0, qPrintable(QString("%1 rank(s) failed; on rank %2: %3")               \
                                       .arg(bad_)                                             \
                                       .arg(moebench::MpiRuntime::world_rank())               \
                                       .arg((chk).errors.join("; "))));                       \
  } while (0)

#pragma once
// main() for QtTest suites that run under mpirun: MPI with MPI_THREAD_MULTIPLE, QtTest output
// from rank 0 only (others run -silent), and one verdict for the job: any rank's failure
// fails every rank's exit code.
#include <QtTest>

#include <mpi.h>

#include <vector>

#include "moebench/dist/mpi_communicator.h"

#define MOEBENCH_MPI_TEST_MAIN(TestClass)                                              \
  int main(int argc, char** argv) {                                                    \
    moebench::MpiRuntime mpi(&argc, &argv);                                            \
    std::vector<char*> args(argv, argv + argc);                                        \
    char silent[] = "-silent";                                                         \
    if (moebench::MpiRuntime::world_rank() != 0) args.push_back(silent);               \
    TestClass t;                                                                       \
    int rc = QTest::qExec(&t, (int)args.size(), args.data());                          \
    int all = 0;                                                                       \
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);                     \
    return all;                                                                        \
  }

// MpiRuntime and the MPI backend's shared internals: error strings, type mapping and
// point-to-point messages in pieces (mpi_detail.h).
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/scheduler_env.h"
#include "mpi_detail.h"

namespace moebench {

namespace detail {

void throw_mpi(const char* op, int rc) {
  char msg[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) std::snprintf(msg, sizeof msg, "error %d", rc);
  throw std::runtime_error(std::string(op) + " failed: " + std::string(msg, (size_t)std::max(0, len)));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
  }
  throw std::invalid_argument("mpi_type: unknown DType");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  throw std::invalid_argument("mpi_op: unknown ReduceOp");
}

void check_peer(const char* what, int peer, int size) {
  if (peer < 0 || peer >= size)
    throw std::out_of_range(std::string(what) + ": rank " + std::to_string(peer) +
                            " outside the communicator of size " + std::to_string(size));
}

namespace {
size_t piece_elems(DType t) { return kPieceBytes / dtype_size(t); }
}  // namespace

PendingMessages::~PendingMessages() {
  if (reqs_.empty()) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  try {
    wait("MPI_Waitall");
  } catch (...) {
  }
}

void PendingMessages::send(const void* buf, size_t count, DType type, int peer, int tag, MPI_Comm comm) {
  const auto* p = static_cast<const char*>(buf);
  size_t step = piece_elems(type), es = dtype_size(type);
  size_t done = 0;
  do {
    size_t n = std::min(step, count - done);
    MPI_Request r;
    mpi_check(MPI_Isend(p + done * es, (int)n, mpi_type(type), peer, tag, comm, &r), "MPI_Isend");
    reqs_.push_back(r);
    expect_.push_back(-1);
    peers_.push_back(peer);
    types_.push_back(mpi_type(type));
    done += n;
  } while (done < count);
}

void PendingMessages::recv(void* buf, size_t count, DType type, int peer, int tag, MPI_Comm comm) {
  auto* p = static_cast<char*>(buf);
  size_t step = piece_elems(type), es = dtype_size(type);
  size_t done = 0;
  do {
    size_t n = std::min(step, count - done);
    MPI_Request r;
    mpi_check(MPI_Irecv(p + done * es, (int)n, mpi_type(type), peer, tag, comm, &r), "MPI_Irecv");
    reqs_.push_back(r);
    expect_.push_back((long long)n);
    peers_.push_back(peer);
    types_.push_back(mpi_type(type));
    done += n;
  } while (done < count);
}

void PendingMessages::check_statuses(std::vector<MPI_Status>& st, int rc, const char* op) {
  if (rc == MPI_ERR_IN_STATUS) {
    for (auto& s : st)
      if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) throw_mpi(op, s.MPI_ERROR);
  }
  mpi_check(rc, op);
  for (size_t i = 0; i < st.size(); ++i) {
    if (expect_[i] < 0) continue;
    int got = 0;
    mpi_check(MPI_Get_count(&st[i], types_[i], &got), "MPI_Get_count");
    if (got != expect_[i])
      throw std::runtime_error(std::string(op) + ": expected " + std::to_string(expect_[i]) +
                               " elements from rank " + std::to_string(peers_[i]) + ", received " +
                               std::to_string(got));
  }
}

void PendingMessages::finish(std::vector<MPI_Status>& st, int rc, const char* op) {
  // Completed requests are MPI_REQUEST_NULL now (pending ones after an error are abandoned).
  reqs_.clear();
  struct Clear {
    PendingMessages* p;
    ~Clear() { p->expect_.clear(), p->peers_.clear(), p->types_.clear(); }
  } clear{this};
  check_statuses(st, rc, op);
}

void PendingMessages::wait(const char* op) {
  if (reqs_.empty()) return;
  std::vector<MPI_Status> st(reqs_.size());
  int rc = MPI_Waitall((int)reqs_.size(), reqs_.data(), st.data());
  finish(st, rc, op);
}

bool PendingMessages::test(const char* op) {
  if (reqs_.empty()) return true;
  std::vector<MPI_Status> st(reqs_.size());
  int flag = 0;
  int rc = MPI_Testall((int)reqs_.size(), reqs_.data(), &flag, st.data());
  if (!flag && rc == MPI_SUCCESS) return false;
  finish(st, rc, op);
  return true;
}

}  // namespace detail

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int init = 0;
  MPI_Initialized(&init);
  int provided = MPI_THREAD_SINGLE;
  if (!init) {
    // Under srun, more tasks on a node than its CPUs: make Open MPI yield instead of busy-polling
    // (as mpirun does itself when it oversubscribes); scheduler_env.h has the rule.
    yield_when_oversubscribed_under_srun();
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) detail::throw_mpi("MPI_Init_thread", rc);
    owns_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (owns_) MPI_Finalize();
    owns_ = false;
    throw std::runtime_error("OpenMPI was built without MPI_THREAD_MULTIPLE (provided thread level " +
                             std::to_string(provided) + ", need " +
                             std::to_string(MPI_THREAD_MULTIPLE) + ")");
  }
  detail::rma_runtime_started();
}

MpiRuntime::~MpiRuntime() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) detail::rma_runtime_ended();
  if (!owns_) return;
  if (!fin) MPI_Finalize();
}

int MpiRuntime::world_rank() {
  int r = 0;
  detail::mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
  return r;
}

int MpiRuntime::world_size() {
  int n = 1;
  detail::mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
  return n;
}

bool MpiRuntime::under_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK"})
    if (std::getenv(v)) return true;
  // srun sets SLURM_PROCID in every task of a step; a batch script has it too but is no launch.
  return std::getenv("SLURM_PROCID") && std::getenv("SLURM_STEP_ID");
}

std::string MpiRuntime::hostname() {
  char buf[HOST_NAME_MAX + 1] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

void MpiRuntime::abort_job(int code) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace moebench

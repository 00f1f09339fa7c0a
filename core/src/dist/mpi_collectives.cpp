// MpiCommunicator collectives: ring reduce-scatter / all-gather (all_reduce is both), binomial
// broadcast, MPI_Alltoallv, barrier. Every message goes through count_send, so the bytes per
// peer are exact (see mpi_communicator.h).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_detail.h"
#include "moebench/dist/mpi_communicator.h"
#include "mpi_detail.h"

namespace moebench {

namespace {

// The size() segments of a buffer of count elements: the first count % P are one longer.
struct Segments {
  size_t base, rem;
  Segments(size_t count, int parts) : base(count / (size_t)parts), rem(count % (size_t)parts) {}
  size_t offset(int i) const { return (size_t)i * base + std::min((size_t)i, rem); }
  size_t length(int i) const { return base + ((size_t)i < rem ? 1 : 0); }
};

inline int mod(int a, int p) { return ((a % p) + p) % p; }

}  // namespace

void MpiCommunicator::Ops::exchange(const void* sbuf, size_t scount, int dst, void* rbuf,
                                    size_t rcount, int src, DType type, int tag, const char* op) {
  detail::PendingMessages msgs;
  if (rcount) msgs.recv(rbuf, rcount, type, src, tag, comm);
  if (scount) msgs.send(sbuf, scount, type, dst, tag, comm);
  msgs.wait(op);
  if (scount) self->count_send(dst, scount * dtype_size(type));
}

// Ring all-reduce. Reduce-scatter: at step s rank r sends segment r-s-1 to r+1 and receives
// segment r-s-2 from r-1, which it reduces into its own copy (own value first); after P-1 steps
// it holds the full reduction of segment r. All-gather: at step s it forwards segment r-s and
// receives segment r-s-1. Segment k is reduced along the chain k+1, k+2, ..., k and only copied
// afterwards, so every rank ends with the same bits.
void MpiCommunicator::Ops::all_reduce(void* data, size_t count, DType type, ReduceOp op) {
  if (size == 1 || count == 0) return;
  const size_t es = dtype_size(type);
  auto* d = static_cast<uint8_t*>(data);
  Segments seg(count, size);
  const int right = mod(rank + 1, size), left = mod(rank - 1, size);
  std::vector<uint8_t> tmp(seg.length(0) * es);
  for (int s = 0; s < size - 1; ++s) {
    int sseg = mod(rank - s - 1, size), rseg = mod(rank - s - 2, size);
    exchange(d + seg.offset(sseg) * es, seg.length(sseg), right, tmp.data(), seg.length(rseg), left,
             type, detail::kTagReduceScatter, "all_reduce (ring reduce-scatter)");
    uint8_t* mine = d + seg.offset(rseg) * es;
    detail::reduce_elements(mine, mine, tmp.data(), seg.length(rseg), type, op);
  }
  for (int s = 0; s < size - 1; ++s) {
    int sseg = mod(rank - s, size), rseg = mod(rank - s - 1, size);
    exchange(d + seg.offset(sseg) * es, seg.length(sseg), right, d + seg.offset(rseg) * es,
             seg.length(rseg), left, type, detail::kTagAllGather, "all_reduce (ring all-gather)");
  }
}

void MpiCommunicator::Ops::reduce_scatter(const void* send, void* recv, size_t count, DType type,
                                          ReduceOp op) {
  const size_t es = dtype_size(type), bytes = count * es;
  if (count == 0) return;
  const auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  if (size == 1) {
    if (in != out) std::memmove(out, in, bytes);
    return;
  }
  const int right = mod(rank + 1, size), left = mod(rank - 1, size);
  std::vector<uint8_t> cur(bytes), tmp(bytes);
  for (int s = 0; s < size - 1; ++s) {
    int sseg = mod(rank - s - 1, size), rseg = mod(rank - s - 2, size);
    const uint8_t* src = s == 0 ? in + (size_t)sseg * bytes : cur.data();
    exchange(src, count, right, tmp.data(), count, left, type, detail::kTagReduceScatter,
             "reduce_scatter (ring)");
    uint8_t* dst = s == size - 2 ? out : cur.data();  // the last step yields segment `rank`
    detail::reduce_elements(dst, in + (size_t)rseg * bytes, tmp.data(), count, type, op);
  }
}

void MpiCommunicator::Ops::all_gather(const void* send, void* recv, size_t count, DType type) {
  const size_t es = dtype_size(type), bytes = count * es;
  if (count == 0) return;
  auto* out = static_cast<uint8_t*>(recv);
  if (send != out + (size_t)rank * bytes) std::memmove(out + (size_t)rank * bytes, send, bytes);
  if (size == 1) return;
  const int right = mod(rank + 1, size), left = mod(rank - 1, size);
  for (int s = 0; s < size - 1; ++s) {
    int sseg = mod(rank - s, size), rseg = mod(rank - s - 1, size);
    exchange(out + (size_t)sseg * bytes, count, right, out + (size_t)rseg * bytes, count, left, type,
             detail::kTagAllGather, "all_gather (ring)");
  }
}

// Binomial tree rooted at `root` over ranks relative to it: a rank receives once from the rank
// that differs in its lowest set bit, then sends to rank + 2^k for the lower bits.
void MpiCommunicator::Ops::broadcast(void* data, size_t count, DType type, int root) {
  detail::check_peer("broadcast root", root, size);
  if (size == 1 || count == 0) return;
  const int vr = mod(rank - root, size);
  int mask = 1;
  while (mask < size) {
    if (vr & mask) {
      exchange(nullptr, 0, 0, data, count, mod(vr - mask + root, size), type, detail::kTagBroadcast,
               "broadcast (binomial tree)");
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  detail::PendingMessages msgs;
  std::vector<int> children;
  for (; mask > 0; mask >>= 1) {
    if (vr + mask < size) {
      int child = mod(vr + mask + root, size);
      msgs.send(data, count, type, child, detail::kTagBroadcast, comm);
      children.push_back(child);
    }
  }
  msgs.wait("broadcast (binomial tree)");
  for (int c : children) self->count_send(c, count * dtype_size(type));
}

// Broadcast's binomial tree reversed: a rank receives from its children (distance + 2^k for
// each k below its lowest set bit, ascending) and reduces each into its data, then sends the
// result to its parent; the root ends with the reduction. Deterministic order.
void MpiCommunicator::Ops::reduce(void* data, size_t count, DType type, int root, ReduceOp op) {
  detail::check_peer("reduce root", root, size);
  if (size == 1 || count == 0) return;
  const int vr = mod(rank - root, size);
  const size_t bytes = count * dtype_size(type);
  std::vector<uint8_t> tmp(bytes), partial;
  auto* d = static_cast<uint8_t*>(data);
  uint8_t* acc = d;  // the root reduces in place; an inner rank into a copy (its data stays)
  int mask = 1;
  for (; mask < size && !(vr & mask); mask <<= 1) {
    if (vr + mask >= size) continue;
    if (acc == d && vr != 0) {
      partial.assign(d, d + bytes);
      acc = partial.data();
    }
    exchange(nullptr, 0, 0, tmp.data(), count, mod(vr + mask + root, size), type, detail::kTagReduce,
             "reduce (binomial tree)");
    detail::reduce_elements(acc, acc, tmp.data(), count, type, op);
  }
  if (vr != 0)
    exchange(acc, count, mod(vr - mask + root, size), nullptr, 0, 0, type, detail::kTagReduce, "reduce (binomial tree)");
}

void MpiCommunicator::Ops::all_to_all_v(const void* send, const size_t* send_counts,
                                        const size_t* send_displs, void* recv,
                                        const size_t* recv_counts, const size_t* recv_displs,
                                        DType type) {
  std::vector<int> sc(size), sd(size), rc(size), rd(size);
  auto to_int = [](size_t v, const char* what) {
    if (v > (size_t)INT_MAX)
      throw std::invalid_argument(std::string("all_to_all_v: ") + what + " " + std::to_string(v) +
                                  " exceeds the MPI limit of 2^31-1 elements");
    return (int)v;
  };
  for (int p = 0; p < size; ++p) {
    sc[p] = to_int(send_counts[p], "send count");
    sd[p] = to_int(send_displs[p], "send displacement");
    rc[p] = to_int(recv_counts[p], "receive count");
    rd[p] = to_int(recv_displs[p], "receive displacement");
  }
  MPI_Datatype t = detail::mpi_type(type);
  detail::mpi_check(MPI_Alltoallv(send, sc.data(), sd.data(), t, recv, rc.data(), rd.data(), t, comm),
                    "MPI_Alltoallv");
  for (int p = 0; p < size; ++p)
    if (p != rank) self->count_send(p, send_counts[p] * dtype_size(type));
}

// ---- the blocking entry points ----

void MpiCommunicator::all_reduce(void* data, size_t count, DType type, ReduceOp op) {
  Ops{this, comm_, rank_, size_}.all_reduce(data, count, type, op);
}

void MpiCommunicator::all_gather(const void* send, void* recv, size_t count, DType type) {
  Ops{this, comm_, rank_, size_}.all_gather(send, recv, count, type);
}

void MpiCommunicator::reduce_scatter(const void* send, void* recv, size_t count, DType type,
                                     ReduceOp op) {
  Ops{this, comm_, rank_, size_}.reduce_scatter(send, recv, count, type, op);
}

void MpiCommunicator::all_to_all_v(const void* send, const size_t* send_counts,
                                   const size_t* send_displs, void* recv, const size_t* recv_counts,
                                   const size_t* recv_displs, DType type) {
  Ops{this, comm_, rank_, size_}.all_to_all_v(send, send_counts, send_displs, recv, recv_counts,
                                              recv_displs, type);
}

void MpiCommunicator::broadcast(void* data, size_t count, DType type, int root) {
  Ops{this, comm_, rank_, size_}.broadcast(data, count, type, root);
}

void MpiCommunicator::reduce(void* data, size_t count, DType type, int root, ReduceOp op) {
  Ops{this, comm_, rank_, size_}.reduce(data, count, type, root, op);
}

void MpiCommunicator::barrier() { detail::mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }

}  // namespace moebench

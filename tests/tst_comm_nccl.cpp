// ctest-labels: gpu np=2
// NcclCommunicator (dist/nccl_communicator.h) on device buffers, bootstrapped over MPI:
// all_reduce, all_gather, reduce_scatter, all_to_all_v (irregular counts, some zero),
// broadcast, send/recv (blocking and the irecv/isend pattern), iall_reduce, dup/split,
// the CUDA IPC windows, served windows across machines and the traffic counts. Host data is
// copied in and the results are compared with host references. Every rank runs every
// collective before any comparison, so a failed check on one rank cannot leave the other
// waiting in a collective.
//
// Without NCCL in the build, or without a GPU, every test is skipped. When ranks must share
// a GPU (fewer devices than ranks; device = rank % device_count()), the communicator gives
// them distinct NCCL host identities itself (dist/device_sharing.h), so this test runs 2
// ranks on a 1-GPU machine.
#include <QtTest>

#include <mpi.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/dist/mpi_communicator.h"

#ifdef MOEBENCH_HAVE_NCCL
#include <cuda_runtime_api.h>

#include "host_device.h"
#include "moebench/dist/nccl_communicator.h"
#include "moebench/dist/served_window.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#endif
#include "mpi_test_main.h"

using namespace moebench;

#define MOEBENCH_SKIP_MSG "no GPU: NCCL communicator test skipped"

#ifdef MOEBENCH_HAVE_NCCL
namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A device array of T with host upload / download (both complete before returning).
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&p_), sizeof(T) * (n ? n : 1)), "cudaMalloc");
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() { (void)cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() { return p_; }
  void upload(const std::vector<T>& host) {
    cuda_ok(cudaMemcpy(p_, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  std::vector<T> download() {
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> host(n_);
    cuda_ok(cudaMemcpy(host.data(), p_, sizeof(T) * n_, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return host;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

// Elements rank `src` sends to rank `dst` in the all_to_all_v test (zero for some pairs).
size_t a2a_count(int src, int dst) { return static_cast<size_t>((src * 3 + dst * 5 + 1) % 7); }
float a2a_value(int src, int dst, size_t k) { return float(src * 10000 + dst * 100 + (int)k); }
bool shared_zeroed(const std::vector<float>& v) {
  for (float x : v)
    if (x != 0.0f) return false;
  return true;
}

}  // namespace
#endif

class TestCommNccl : public QObject {
  Q_OBJECT

#ifdef MOEBENCH_HAVE_NCCL
  std::unique_ptr<MpiCommunicator> world_;
  std::unique_ptr<NcclCommunicator> nccl_;
  std::unique_ptr<TrafficMeter> meter_;
  std::string init_error_;
#endif

  // Ends the calling test: skip without NCCL/GPU, fail when the communicator could not start.
#ifdef MOEBENCH_HAVE_NCCL
#define REQUIRE_NCCL()                                                              \
  do {                                                                              \
    if (!init_error_.empty()) QFAIL(("NcclCommunicator: " + init_error_).c_str()); \
    if (!nccl_) QSKIP(MOEBENCH_SKIP_MSG);                                           \
  } while (0)
#else
#define REQUIRE_NCCL() QSKIP(MOEBENCH_SKIP_MSG)
#endif

 private slots:
  void initTestCase() {
#ifdef MOEBENCH_HAVE_NCCL
    const int ndev = NcclCommunicator::device_count();
    if (ndev == 0) return;
    world_ = MpiCommunicator::world();
    const int r = world_->rank();
    try {
      nccl_ = std::make_unique<NcclCommunicator>(*world_, r % ndev);
      meter_ = std::make_unique<TrafficMeter>(r, Topology::virtual_blocks(1, world_->size()));
      nccl_->set_traffic_meter(meter_.get());
    } catch (const std::exception& e) {
      init_error_ = e.what();
    }
#endif
  }

  void cleanupTestCase() {
#ifdef MOEBENCH_HAVE_NCCL
    nccl_.reset();
    world_.reset();
#endif
  }

  void basics() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    QCOMPARE(nccl_->backend(), std::string("nccl"));
    QCOMPARE(nccl_->rank(), world_->rank());
    QCOMPARE(nccl_->size(), world_->size());
    for (int i = 0; i < nccl_->size(); ++i) QCOMPARE(nccl_->world_rank(i), world_->world_rank(i));
    nccl_->barrier();
#endif
  }

  void all_reduce_sum_and_max() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    const size_t n = 1000;
    std::vector<float> x(n);
    std::vector<int32_t> m(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = float((r + 1) * (int)(i % 97)) + 0.5f * float(r);
      m[i] = (int32_t)((i * 7 + (size_t)r * 13) % 101);
    }
    DeviceArray<float> dx(x);
    DeviceArray<int32_t> dm(m);
    meter_->reset();
    nccl_->all_reduce(dx.get(), n, DType::f32, ReduceOp::sum);
    const uint64_t counted = meter_->bytes_to((r + 1) % P);
    nccl_->all_reduce(dm.get(), n, DType::i32, ReduceOp::max);
    std::vector<float> got = dx.download();
    std::vector<int32_t> gotm = dm.download();

    std::vector<float> want(n, 0.0f);
    std::vector<int32_t> wantm(n, 0);
    for (int q = 0; q < P; ++q)
      for (size_t i = 0; i < n; ++i) {
        want[i] += float((q + 1) * (int)(i % 97)) + 0.5f * float(q);
        wantm[i] = std::max(wantm[i], (int32_t)((i * 7 + (size_t)q * 13) % 101));
      }
    QCOMPARE(got, want);  // small integers and halves: exact in any summation order
    QCOMPARE(gotm, wantm);
    if (P > 1) QCOMPARE(counted, uint64_t(2 * (P - 1) * n * 4 / P));  // ring model
#endif
  }

  void all_gather() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    const size_t n = 37;
    std::vector<float> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = float(r * 100 + (int)i);
    DeviceArray<float> send(mine);
    DeviceArray<float> recv(n * P);
    nccl_->all_gather(send.get(), recv.get(), n, DType::f32);
    std::vector<float> got = recv.download();
    std::vector<float> want;
    for (int q = 0; q < P; ++q)
      for (size_t i = 0; i < n; ++i) want.push_back(float(q * 100 + (int)i));
    QCOMPARE(got, want);
#endif
  }

  void reduce_scatter() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    const size_t n = 29;  // elements per rank
    std::vector<double> x(n * P);
    for (size_t j = 0; j < x.size(); ++j) x[j] = double(r * 1000 + (int)j);
    DeviceArray<double> send(x);
    DeviceArray<double> recv(n);
    nccl_->reduce_scatter(send.get(), recv.get(), n, DType::f64, ReduceOp::sum);
    std::vector<double> got = recv.download();
    std::vector<double> want(n, 0.0);
    for (int q = 0; q < P; ++q)
      for (size_t i = 0; i < n; ++i) want[i] += double(q * 1000 + (int)(r * n + i));
    QCOMPARE(got, want);
#endif
  }

  void all_to_all_v_irregular() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    std::vector<size_t> sc(P), sd(P), rc(P), rd(P);
    size_t stotal = 0, rtotal = 0;
    for (int p = 0; p < P; ++p) {
      sc[p] = a2a_count(r, p);
      sd[p] = stotal;
      stotal += sc[p] + 1;  // a gap of one element between blocks
      rc[p] = a2a_count(p, r);
      rd[p] = rtotal;
      rtotal += rc[p] + 2;
    }
    std::vector<float> x(stotal, -1.0f);
    for (int p = 0; p < P; ++p)
      for (size_t k = 0; k < sc[p]; ++k) x[sd[p] + k] = a2a_value(r, p, k);
    DeviceArray<float> send(x);
    DeviceArray<float> recv(std::vector<float>(rtotal, -7.0f));
    meter_->reset();
    nccl_->all_to_all_v(send.get(), sc.data(), sd.data(), recv.get(), rc.data(), rd.data(), DType::f32);
    std::vector<uint64_t> counted = meter_->per_peer();
    std::vector<float> got = recv.download();

    std::vector<float> want(rtotal, -7.0f);
    for (int p = 0; p < P; ++p)
      for (size_t k = 0; k < rc[p]; ++k) want[rd[p] + k] = a2a_value(p, r, k);
    QCOMPARE(got, want);
    for (int p = 0; p < P; ++p)
      QCOMPARE(counted[p], p == r ? uint64_t(0) : uint64_t(sc[p] * sizeof(float)));
#endif
  }

  void broadcast() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    const int root = 1 % P;
    const size_t n = 333;
    std::vector<int64_t> x(n, -1);
    if (r == root)
      for (size_t i = 0; i < n; ++i) x[i] = (int64_t)i * 1000003 + 7;
    DeviceArray<int64_t> d(x);
    nccl_->broadcast(d.get(), n, DType::i64, root);
    std::vector<int64_t> got = d.download();
    std::vector<int64_t> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = (int64_t)i * 1000003 + 7;
    QCOMPARE(got, want);
#endif
  }

  void send_recv() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    if (P < 2) QSKIP("send/recv needs two ranks");
    const size_t n = 513;
    std::vector<double> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = 0.25 * double(i) + 1.0;
      b[i] = -3.0 * double(i);
    }
    DeviceArray<double> buf(std::vector<double>(n, 0.0));
    DeviceArray<double> mine(r == 0 ? a : b);
    DeviceArray<double> theirs(std::vector<double>(n, 0.0));
    meter_->reset();
    // Blocking: 0 -> 1.
    if (r == 0) nccl_->send(mine.get(), n, DType::f64, 1);
    if (r == 1) nccl_->recv(buf.get(), n, DType::f64, 0);
    // Both directions at once, MPI style: irecv, isend, then wait (one NCCL group).
    bool completed = true;
    if (r < 2) {
      const int peer = 1 - r;
      RequestPtr rr = nccl_->irecv(theirs.get(), n, DType::f64, peer);
      RequestPtr rs = nccl_->isend(mine.get(), n, DType::f64, peer);
      rs->wait();
      rr->wait();
      completed = rr->test() && rs->test();
    }
    const uint64_t counted = r < 2 ? meter_->bytes_to(1 - r) : 0;
    nccl_->barrier();

    QVERIFY(completed);
    if (r == 1) QCOMPARE(buf.download(), a);
    if (r < 2) {
      QCOMPARE(theirs.download(), r == 0 ? b : a);
      QCOMPARE(counted, uint64_t((r == 0 ? 2 : 1) * n * sizeof(double)));
    }
#endif
  }

  void iall_reduce() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    const size_t n = 1 << 16;
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = float((int)(i % 31) + r);
    DeviceArray<float> d(x);
    RequestPtr req = nccl_->iall_reduce(d.get(), n, DType::f32);
    int polls = 0;
    while (!req->test() && polls < 100000000) ++polls;
    req->wait();
    QVERIFY(req->test());
    std::vector<float> got = d.download();
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = float(P * (int)(i % 31) + P * (P - 1) / 2);
    QCOMPARE(got, want);
#endif
  }

  void dup_and_split() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank();
    std::unique_ptr<Communicator> d = nccl_->dup();
    std::unique_ptr<Communicator> rev = nccl_->split(0, P - 1 - r);  // reversed order
    std::unique_ptr<Communicator> none = nccl_->split(r == 0 ? -1 : 1, r);
    QVERIFY(d && rev);
    DeviceArray<int32_t> v(std::vector<int32_t>{r + 1});
    d->all_reduce(v.get(), 1, DType::i32);
    const int32_t dup_sum = v.download()[0];
    DeviceArray<int32_t> w(std::vector<int32_t>{rev->rank()});
    rev->broadcast(w.get(), 1, DType::i32, 0);  // root = old rank P-1
    const int32_t root_value = w.download()[0];
    int32_t sub_sum = -1;
    if (none) {
      DeviceArray<int32_t> u(std::vector<int32_t>{1});
      none->all_reduce(u.get(), 1, DType::i32);
      sub_sum = u.download()[0];
    }

    QCOMPARE(d->size(), P);
    QCOMPARE(d->rank(), r);
    QCOMPARE(d->backend(), std::string("nccl"));
    QCOMPARE(d->traffic_meter(), static_cast<TrafficMeter*>(meter_.get()));
    QCOMPARE(dup_sum, int32_t(P * (P + 1) / 2));
    QCOMPARE(rev->size(), P);
    QCOMPARE(rev->rank(), P - 1 - r);
    for (int i = 0; i < P; ++i) QCOMPARE(rev->world_rank(i), world_->world_rank(P - 1 - i));
    QCOMPARE(root_value, 0);
    QCOMPARE(none == nullptr, r == 0);
    if (none) {
      QCOMPARE(none->size(), P - 1);
      QCOMPARE(sub_sum, int32_t(P - 1));
    }
#endif
  }

  // One-sided windows over CUDA IPC: a window inside an allocation (at an offset), get and put
  // against every other rank, accumulate of every rank into rank 0, the pulls on the puller's
  // meter; a node-shared window's zeroed segments written by their owners and read by all.
  void ipc_windows() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank(), next = (r + 1) % P;
    const size_t n = 64, lead = 16;  // the window starts 16 floats into its allocation
    std::vector<float> mine(lead + n, -1.0f);
    for (size_t i = 0; i < n; ++i) mine[lead + i] = float(r * 1000 + (int)i);
    DeviceArray<float> mem(mine);
    auto win = nccl_->create_window(mem.get() + lead, n, DType::f32);
    const uint64_t before = meter_->total();  // the handles' exchange aside
    QCOMPARE(win->local_count(), n);
    win->barrier();
    DeviceArray<float> got(8);
    win->get(got.get(), 8, next, 4 * sizeof(float));  // next rank's elements 4..11
    win->flush(next);
    std::vector<float> expect(8);
    for (size_t i = 0; i < 8; ++i) expect[i] = float(next * 1000 + 4 + (int)i);
    const std::vector<float> pulled = got.download();
    win->barrier();  // every get is done before anyone writes
    DeviceArray<float> mark(std::vector<float>(2, float(-(r + 1))));
    win->put(mark.get(), 2, next, 20 * sizeof(float));  // into the next rank's elements 20, 21
    DeviceArray<float> ones(std::vector<float>(4, float(r + 1)));
    win->accumulate(ones.get(), 4, 0, 40 * sizeof(float), ReduceOp::sum);  // everyone into rank 0's 40..43
    win->barrier();
    const std::vector<float> after = mem.download();
    const uint64_t counted = meter_->total() - before;
    std::unique_ptr<SharedWindow> shared = nccl_->create_shared_window(16 * sizeof(float));
    std::vector<float> zeros(16, 1.0f), theirs(16, 0.0f);
    cuda_ok(cudaMemcpy(zeros.data(), shared->segment(r), sizeof(float) * 16, cudaMemcpyDeviceToHost), "cudaMemcpy");
    const std::vector<float> fill(16, float(r + 7));
    cuda_ok(cudaMemcpy(shared->segment(r), fill.data(), sizeof(float) * 16, cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    shared->sync();
    cuda_ok(cudaMemcpy(theirs.data(), shared->segment(next), sizeof(float) * 16, cudaMemcpyDeviceToHost), "cudaMemcpy");
    shared->sync();
    shared.reset();
    win.reset();

    QCOMPARE(pulled, expect);
    QCOMPARE(after[0], -1.0f);  // before the window: untouched
    const int prev = (r + P - 1) % P;
    QCOMPARE(after[lead + 20], float(-(prev + 1)));
    QCOMPARE(after[lead + 21], float(-(prev + 1)));
    QCOMPARE(after[lead + 22], float(r * 1000 + 22));
    const float added = r == 0 ? float(P * (P + 1) / 2) : 0.0f;
    for (size_t i = 40; i < 44; ++i) QCOMPARE(after[lead + i], float(r * 1000 + (int)i) + added);
    QCOMPARE(counted, uint64_t((8 + 2 + 4) * sizeof(float)) - (r == 0 ? 4 * sizeof(float) : 0));  // no self traffic
    QCOMPARE(shared_zeroed(zeros), true);
    QCOMPARE(theirs, std::vector<float>(16, float(next + 7)));
#endif
  }

  // Served windows (dist/served_window.h) on GPUs: each rank taken for a machine of its own
  // (tests/host_device.h's RecordingCommunicator over a dup says its windows reach no peer), so
  // every get, put and accumulate is a request over MPI that the target's thread serves through
  // the NCCL backend's staging (page-locked buffers, its own stream, atomicAdd from a device
  // copy); the bytes on the requester's meter as CUDA IPC counts them.
  void served_windows_across_machines() {
    REQUIRE_NCCL();
#ifdef MOEBENCH_HAVE_NCCL
    const int P = nccl_->size(), r = nccl_->rank(), next = (r + 1) % P;
    const size_t n = 64;
    std::vector<float> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = float(r * 1000 + (int)i);
    DeviceArray<float> mem(mine);
    test::RecordingCommunicator data(nccl_->dup(), std::make_shared<std::vector<test::RecordedCall>>(),
                                     [](int world_rank) { return world_rank; });
    TrafficMeter meter(r, Topology::virtual_blocks(P, 1));
    data.set_traffic_meter(&meter);
    auto win = create_served_window(data, *world_, mem.get(), n, DType::f32);
    DeviceArray<float> got(8);
    win->get(got.get(), 8, next, 4 * sizeof(float));
    win->flush(next);
    const std::vector<float> pulled = got.download();
    win->barrier();
    DeviceArray<float> mark(std::vector<float>(2, float(-(r + 1))));
    win->put(mark.get(), 2, next, 20 * sizeof(float));
    DeviceArray<float> ones(std::vector<float>(4, float(r + 1)));
    win->accumulate(ones.get(), 4, 0, 40 * sizeof(float), ReduceOp::sum);  // served, and rank 0's own through IPC
    win->barrier();
    const std::vector<float> after = mem.download();
    win.reset();

    std::vector<float> expect(8);
    for (size_t i = 0; i < 8; ++i) expect[i] = float(next * 1000 + 4 + (int)i);
    QCOMPARE(pulled, expect);
    const int prev = (r + P - 1) % P;
    QCOMPARE(after[20], float(-(prev + 1)));
    QCOMPARE(after[22], float(r * 1000 + 22));
    const float added = r == 0 ? float(P * (P + 1) / 2) : 0.0f;
    for (size_t i = 40; i < 44; ++i) QCOMPARE(after[i], float(r * 1000 + (int)i) + added);
    QCOMPARE(meter.total(), uint64_t((8 + 2 + 4) * sizeof(float)) - (r == 0 ? 4 * sizeof(float) : 0));
#endif
  }
};

MOEBENCH_MPI_TEST_MAIN(TestCommNccl)

#include "tst_comm_nccl.moc"

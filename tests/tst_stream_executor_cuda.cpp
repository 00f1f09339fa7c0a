// ctest-labels: gpu
// StreamExecutor on a GPU (runtime/cuda_device_queue.h): a chain of 64 MiB device-to-device
// copies hopping between the compute, comm and copy streams, each copy reading the buffer the
// one before it wrote. Only the executor's cudaEvent waits order them (the streams are
// non-blocking, the host never waits in between), so a missing or wrong wait shows up as stale
// data at the end. Spans come from the events: every copy starts after the one before it ended.
// Without a CUDA build or a GPU every test is skipped.
#include <QtTest>

#include <cstring>
#include <vector>

#include "gpu_support.h"
#include "moebench/runtime/stream_executor.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "moebench/runtime/cuda_device_queue.h"
#endif

using namespace moebench;

class TestStreamExecutorCuda : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { MOEBENCH_REQUIRE_GPU(); }

#ifdef MOEBENCH_HAVE_CUDA
  void copies_across_streams_see_each_others_data() {
    CudaDeviceQueue q(0);
    StreamExecutor ex(q, 0);
    const size_t floats = (size_t)16 << 20;  // 64 MiB per buffer
    const int hops = 12;
    std::vector<float*> buf((size_t)hops + 1, nullptr);
    for (float*& b : buf) QCOMPARE(cudaMalloc((void**)&b, floats * sizeof(float)), cudaSuccess);
    for (float* b : buf) QCOMPARE(cudaMemset(b, 0, floats * sizeof(float)), cudaSuccess);
    QCOMPARE(cudaDeviceSynchronize(), cudaSuccess);
    auto stream = [&q] { return (cudaStream_t)q.cuda_stream(q.current_stream()); };
    const StreamRole roles[] = {StreamRole::compute, StreamRole::comm_inter, StreamRole::copy};
    TaskGraph g;
    GraphTask fill;
    fill.name = "fill";
    fill.action = [&] { cudaMemsetAsync(buf[0], 0x3f, floats * sizeof(float), stream()); };  // 0x3f3f3f3f
    TaskId last = g.add(std::move(fill));
    for (int i = 1; i <= hops; ++i) {
      GraphTask t;
      t.name = "hop";
      t.chunk = i;
      t.role = roles[i % 3];
      t.category = TaskCategory::copy;
      t.action = [&, i] {
        cudaMemcpyAsync(buf[(size_t)i], buf[(size_t)i - 1], floats * sizeof(float), cudaMemcpyDeviceToDevice, stream());
      };
      last = g.add(std::move(t), {last});
    }
    ex.submit(g);
    ex.synchronize();
    std::vector<float> host(floats);
    QCOMPARE(cudaMemcpy(host.data(), buf.back(), floats * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    float expected = 0.0f;
    const unsigned pattern = 0x3f3f3f3fu;
    std::memcpy(&expected, &pattern, sizeof expected);
    for (size_t k = 0; k < floats; k += floats / 97) QCOMPARE(host[k], expected);
    QCOMPARE(host.back(), expected);
    const std::vector<Span> spans = ex.take_spans();
    QCOMPARE((int)spans.size(), hops + 1);
    for (size_t k = 1; k < spans.size(); ++k) {
      QVERIFY(spans[k].start <= spans[k].end);
      QVERIFY2(spans[k].start >= spans[k - 1].end - 1e-6, qPrintable(QString("hop %1 started early").arg(k)));
    }
    for (float* b : buf) cudaFree(b);
  }
#endif
};

QTEST_GUILESS_MAIN(TestStreamExecutorCuda)
#include "tst_stream_executor_cuda.moc"

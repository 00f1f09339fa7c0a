// ctest-labels: gpu
// The vocabulary-parallel embedding and cross-entropy kernels (kernels/vocab_parallel.h) and the
// embedding partition's and position embedding's (kernels/embedding_partition.h) against their
// CPU functions (model/vocab_parallel.h, model/embedding_partition.h), fp32, on random inputs at
// shapes that are not multiples of the warp size, every backward from nonzero gradients (the +=
// is checked). Tolerances: copies and the accumulating backwards exact (the same fp32 additions
// in the same order); exp, log and the fp64 row sums 1e-5 relative (1e-6 absolute).
// Without a CUDA build or a GPU every test is skipped.
#include <QtTest>

#include <vector>

#include "gpu_support.h"
#include "moebench/model/embedding_partition.h"
#include "moebench/model/vocab_parallel.h"
#include "test_support.h"

#ifdef MOEBENCH_HAVE_CUDA
#include "cuda_test_support.h"
#include "moebench/kernels/embedding_partition.h"
#include "moebench/kernels/vocab_parallel.h"

using namespace moebench;
using namespace moebench::test;  // cuda_test_support.h
using Vec = std::vector<float>;

namespace {

std::vector<int> ints(size_t n, uint64_t seed, int lo, int hi) {  // uniform in [lo, hi]
  Rng rng(seed);
  std::vector<int> v(n);
  for (int& x : v) x = lo + (int)rng.below((uint64_t)(hi - lo + 1));
  return v;
}

#define EXPECT_MATCH(what, got, ref, atol, rtol)                               \
  do {                                                                         \
    const QString m_ = mismatch((got), (ref), (atol), (rtol));                 \
    QVERIFY2(m_.isEmpty(), qPrintable(QString("%1: %2").arg(what).arg(m_)));   \
  } while (0)

}  // namespace
#endif

class TestKernelsEmbeddings : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { MOEBENCH_REQUIRE_GPU(); }

#ifdef MOEBENCH_HAVE_CUDA
  void vocab_slice_embedding_matches_the_cpu() {
    const long N = 75;
    const int C = 72, V = 37, lo = 12, Vt = 13;  // this rank's rows [12, 25) of 37
    const std::vector<int> tok = ints((size_t)N, 1, 0, V - 1);
    const Vec wte = random_vector((size_t)Vt * C, 2);
    Vec out((size_t)N * C);
    vocab_slice_embed(out.data(), tok.data(), wte.data(), N, C, lo, Vt);
    cuda::DeviceBuffer<int> d_tok(tok);
    cuda::DeviceBuffer<float> d_wte(wte), d_out(out.size());
    cuda::vocab_slice_embed(d_out.data(), d_tok.data(), d_wte.data(), N, C, lo, Vt);
    EXPECT_MATCH("vocab_slice_embed", download(d_out), out, 0.0, 0.0);

    const Vec dout = random_vector(out.size(), 3);
    Vec dwte = random_vector(wte.size(), 4);
    cuda::DeviceBuffer<float> d_dout(dout), d_dwte(dwte);
    vocab_slice_embed_backward(dwte.data(), dout.data(), tok.data(), N, C, lo, Vt);
    cuda::vocab_slice_embed_backward(d_dwte.data(), d_dout.data(), d_tok.data(), N, C, lo, Vt);
    EXPECT_MATCH("vocab_slice_embed_backward", download(d_dwte), dwte, 0.0, 0.0);
  }

  void vocab_parallel_cross_entropy_matches_the_cpu() {
    const int N = 43, Vt = 1001, lo = 2002;  // the third of several slices; some targets elsewhere
    const Vec logits = random_vector((size_t)N * Vt, 5, 5.0f);
    const std::vector<int> targets = ints((size_t)N, 6, lo - 300, lo + Vt + 300);
    Vec rowmax((size_t)N), probs(logits.size()), stats(2 * (size_t)N), losses((size_t)N);
    vocab_ce_row_max(rowmax.data(), logits.data(), N, Vt);
    vocab_ce_exp(probs.data(), stats.data(), logits.data(), rowmax.data(), targets.data(), N, Vt, lo);
    cuda::DeviceBuffer<float> d_logits(logits), d_rowmax(rowmax.size()), d_probs(probs.size()), d_stats(stats.size()),
        d_losses(losses.size());
    cuda::DeviceBuffer<int> d_targets(targets);
    cuda::vocab_ce_row_max(d_rowmax.data(), d_logits.data(), N, Vt);
    EXPECT_MATCH("vocab_ce_row_max", download(d_rowmax), rowmax, 0.0, 0.0);
    cuda::vocab_ce_exp(d_probs.data(), d_stats.data(), d_logits.data(), d_rowmax.data(), d_targets.data(), N, Vt, lo);
    EXPECT_MATCH("vocab_ce_exp probs", download(d_probs), probs, 1e-6, 1e-5);
    EXPECT_MATCH("vocab_ce_exp stats", download(d_stats), stats, 1e-6, 1e-5);

    // The group's sums would go here; finish from the CPU's stats on both sides.
    cuda::DeviceBuffer<float> d_stats_cpu(stats);
    vocab_ce_finish(losses.data(), probs.data(), stats.data(), rowmax.data(), N, Vt);
    cuda::vocab_ce_finish(d_losses.data(), d_probs.data(), d_stats_cpu.data(), d_rowmax.data(), N, Vt);
    EXPECT_MATCH("vocab_ce_finish losses", download(d_losses), losses, 1e-6, 1e-5);
    EXPECT_MATCH("vocab_ce_finish probs", download(d_probs), probs, 1e-6, 1e-5);

    Vec dlogits = random_vector(logits.size(), 7, 1e-3f);
    cuda::DeviceBuffer<float> d_dlogits(dlogits), d_probs_cpu(probs);
    vocab_ce_backward(dlogits.data(), probs.data(), targets.data(), 0.25f, N, Vt, lo);
    cuda::vocab_ce_backward(d_dlogits.data(), d_probs_cpu.data(), d_targets.data(), 0.25f, N, Vt, lo);
    EXPECT_MATCH("vocab_ce_backward", download(d_dlogits), dlogits, 1e-7, 1e-6);
  }

  void embedding_partition_matches_the_cpu() {
    const long N = 45;
    const int T = 15, P = 3, Cp = 24, C = P * Cp, V = 29;
    const std::vector<int> ids = ints((size_t)P * N, 8, 0, V - 1);  // every rank's tokens
    const Vec wte_part = random_vector((size_t)V * Cp, 9);
    Vec looked((size_t)P * N * Cp);
    embedding_partition_lookup(looked.data(), ids.data(), wte_part.data(), P * N, Cp);
    cuda::DeviceBuffer<int> d_ids(ids);
    cuda::DeviceBuffer<float> d_wte(wte_part), d_looked(looked.size());
    cuda::embedding_partition_lookup(d_looked.data(), d_ids.data(), d_wte.data(), P * N, Cp);
    EXPECT_MATCH("embedding_partition_lookup", download(d_looked), looked, 0.0, 0.0);

    const Vec slices = random_vector((size_t)P * N * Cp, 10), wpe = random_vector((size_t)(T + 2) * C, 11);
    Vec x((size_t)N * C);
    embedding_partition_assemble(x.data(), slices.data(), wpe.data(), N, T, P, Cp);
    cuda::DeviceBuffer<float> d_slices(slices), d_wpe(wpe), d_x(x.size());
    cuda::embedding_partition_assemble(d_x.data(), d_slices.data(), d_wpe.data(), N, T, P, Cp);
    EXPECT_MATCH("embedding_partition_assemble", download(d_x), x, 0.0, 0.0);

    const Vec dx = random_vector(x.size(), 12);
    Vec split(slices.size());
    embedding_partition_split(split.data(), dx.data(), N, P, Cp);
    cuda::DeviceBuffer<float> d_dx(dx), d_split(split.size());
    cuda::embedding_partition_split(d_split.data(), d_dx.data(), N, P, Cp);
    EXPECT_MATCH("embedding_partition_split", download(d_split), split, 0.0, 0.0);

    Vec dwte = random_vector(wte_part.size(), 13);
    cuda::DeviceBuffer<float> d_dwte(dwte);
    embedding_partition_backward(dwte.data(), split.data(), ids.data(), P * N, Cp);
    cuda::embedding_partition_backward(d_dwte.data(), d_split.data(), d_ids.data(), P * N, Cp);
    EXPECT_MATCH("embedding_partition_backward", download(d_dwte), dwte, 0.0, 0.0);
  }

  void position_embedding_matches_the_cpu() {
    const long N = 70;
    const int T = 14, C = 40;
    const Vec wpe = random_vector((size_t)(T + 3) * C, 14);
    Vec x = random_vector((size_t)N * C, 15);
    cuda::DeviceBuffer<float> d_x(x), d_wpe(wpe);
    position_embedding_forward(x.data(), wpe.data(), N, T, C);
    cuda::position_embedding_forward(d_x.data(), d_wpe.data(), N, T, C);
    EXPECT_MATCH("position_embedding_forward", download(d_x), x, 0.0, 0.0);

    const Vec dx = random_vector((size_t)N * C, 16);
    Vec dwpe = random_vector(wpe.size(), 17);
    cuda::DeviceBuffer<float> d_dx(dx), d_dwpe(dwpe);
    position_embedding_backward(dwpe.data(), dx.data(), N, T, C);
    cuda::position_embedding_backward(d_dwpe.data(), d_dx.data(), N, T, C);
    EXPECT_MATCH("position_embedding_backward", download(d_dwpe), dwpe, 0.0, 0.0);
  }
#endif
};

QTEST_GUILESS_MAIN(TestKernelsEmbeddings)
#include "tst_kernels_embeddings.moc"

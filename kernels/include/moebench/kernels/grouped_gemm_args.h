#pragma once
// The arguments of one grouped GEMM over the experts of an MoE block: plain C++ (no CUDA
// headers) so the CPU test suite checks the layout arithmetic (tests/tst_dispatch_layout.cpp);
// kernels/src/experts.cu turns them into one cublasGemmGroupedBatchedEx call.
//
// The three builders are the per-expert versions of core's matmul_forward / matmul_backward
// (tensor/matmul.h, llm.c argument order: outputs, inputs, sizes) on row-major matrices:
// rows [offsets[e], offsets[e+1]) of the activations belong to expert e, and expert e's
// weight is block e of one contiguous [E, OC, C] array (element size `elem` bytes), or starts
// e * stride elements after the first expert's when `stride` is given (the parameter arena's
// per-expert layout, experts.h). Experts
// with no rows are left out of the group (a GEMM with no rows changes nothing, even with
// beta = 1). In cuBLAS' column-major terms a row-major [R, W] matrix is a W x R matrix with
// leading dimension W, so for problem i: C_i = alpha op(A_i) op(B_i) + beta C_i with
// op(A_i) m[i] x k[i], op(B_i) k[i] x n[i], C_i m[i] x n[i].
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace moebench::cuda {

enum class GemmOp { N, T };  // CUBLAS_OP_N, CUBLAS_OP_T

// One grouped GEMM: every problem is its own cuBLAS group of size 1 (the experts' row
// counts differ); transa, transb are the same for all problems.
struct GroupedGemmArgs {
  GemmOp transa = GemmOp::N, transb = GemmOp::N;
  std::vector<int> m, n, k, lda, ldb, ldc;  // per problem
  std::vector<const void*> A, B;            // per problem: matrix addresses
  std::vector<void*> C;
  std::vector<int> expert;                  // per problem: the expert it computes
  int count() const { return (int)m.size(); }
};

namespace grouped_detail {

inline void check(const int* offsets, int E, size_t elem, int C, int OC, const char* what) {
  if (E < 1 || C < 1 || OC < 1 || elem == 0)
    throw std::invalid_argument(std::string(what) + ": need E, C, OC >= 1 and an element size");
  if (offsets[0] < 0) throw std::invalid_argument(std::string(what) + ": negative offsets[0]");
  for (int e = 0; e < E; ++e)
    if (offsets[e + 1] < offsets[e])
      throw std::invalid_argument(std::string(what) + ": offsets decrease at expert " + std::to_string(e));
}

inline const void* at(const void* base, size_t elements, size_t elem) {
  return static_cast<const char*>(base) + elements * elem;
}
inline void* at(void* base, size_t elements, size_t elem) {
  return static_cast<char*>(base) + elements * elem;
}

}  // namespace grouped_detail

// out[rows_e, OC] = inp[rows_e, C] @ weight_e[OC, C]^T. Column-major: out^T = weight_e inp^T,
// where weight_e's storage is the C x OC matrix weight_e^T: A = weight_e (op T, lda C),
// B = inp rows (op N, ldb C), m = OC, n = rows_e, k = C, C = out rows (ldc OC).
inline GroupedGemmArgs grouped_linear_forward_args(const int* offsets, int E, size_t elem, void* out,
                                                   const void* inp, const void* weight, int C, int OC, size_t stride = 0) {
  grouped_detail::check(offsets, E, elem, C, OC, "grouped_linear_forward_args");
  GroupedGemmArgs g;
  g.transa = GemmOp::T;
  g.transb = GemmOp::N;
  for (int e = 0; e < E; ++e) {
    const int rows = offsets[e + 1] - offsets[e];
    if (rows == 0) continue;
    const size_t r0 = (size_t)offsets[e];
    g.m.push_back(OC);
    g.n.push_back(rows);
    g.k.push_back(C);
    g.lda.push_back(C);
    g.ldb.push_back(C);
    g.ldc.push_back(OC);
    g.A.push_back(grouped_detail::at(weight, (size_t)e * (stride ? stride : (size_t)OC * C), elem));
    g.B.push_back(grouped_detail::at(inp, r0 * C, elem));
    g.C.push_back(grouped_detail::at(out, r0 * OC, elem));
    g.expert.push_back(e);
  }
  return g;
}

// dinp[rows_e, C] = dout[rows_e, OC] @ weight_e[OC, C] (beta 0 overwrites, 1 accumulates).
// Column-major: dinp^T = weight_e^T dout^T: A = weight_e (op N, lda C), B = dout rows (op N,
// ldb OC), m = C, n = rows_e, k = OC, C = dinp rows (ldc C).
inline GroupedGemmArgs grouped_linear_dinp_args(const int* offsets, int E, size_t elem, void* dinp,
                                                const void* dout, const void* weight, int C, int OC, size_t stride = 0) {
  grouped_detail::check(offsets, E, elem, C, OC, "grouped_linear_dinp_args");
  GroupedGemmArgs g;
  g.transa = GemmOp::N;
  g.transb = GemmOp::N;
  for (int e = 0; e < E; ++e) {
    const int rows = offsets[e + 1] - offsets[e];
    if (rows == 0) continue;
    const size_t r0 = (size_t)offsets[e];
    g.m.push_back(C);
    g.n.push_back(rows);
    g.k.push_back(OC);
    g.lda.push_back(C);
    g.ldb.push_back(OC);
    g.ldc.push_back(C);
    g.A.push_back(grouped_detail::at(weight, (size_t)e * (stride ? stride : (size_t)OC * C), elem));
    g.B.push_back(grouped_detail::at(dout, r0 * OC, elem));
    g.C.push_back(grouped_detail::at(dinp, r0 * C, elem));
    g.expert.push_back(e);
  }
  return g;
}

// dweight_e[OC, C] (+)= dout[rows_e, OC]^T @ inp[rows_e, C] (beta 1 accumulates as
// matmul_backward). Column-major: dweight_e^T = inp^T dout: A = inp rows (op N, lda C),
// B = dout rows (op T, ldb OC), m = C, n = OC, k = rows_e, C = dweight_e (ldc C).
inline GroupedGemmArgs grouped_linear_dweight_args(const int* offsets, int E, size_t elem, void* dweight,
                                                   const void* dout, const void* inp, int C, int OC, size_t stride = 0) {
  grouped_detail::check(offsets, E, elem, C, OC, "grouped_linear_dweight_args");
  GroupedGemmArgs g;
  g.transa = GemmOp::N;
  g.transb = GemmOp::T;
  for (int e = 0; e < E; ++e) {
    const int rows = offsets[e + 1] - offsets[e];
    if (rows == 0) continue;
    const size_t r0 = (size_t)offsets[e];
    g.m.push_back(C);
    g.n.push_back(OC);
    g.k.push_back(rows);
    g.lda.push_back(C);
    g.ldb.push_back(OC);
    g.ldc.push_back(C);
    g.A.push_back(grouped_detail::at(inp, r0 * C, elem));
    g.B.push_back(grouped_detail::at(dout, r0 * OC, elem));
    g.C.push_back(grouped_detail::at(dweight, (size_t)e * (stride ? stride : (size_t)OC * C), elem));
    g.expert.push_back(e);
  }
  return g;
}

}  // namespace moebench::cuda

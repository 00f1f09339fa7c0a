#pragma once
// Embedding partition in data parallelism (MoESys §IV-C, Fig. 9; model.embedding_partition):
// the token embedding [V, C] is split by columns over the P data-parallel ranks, rank r holding
// columns [r Cp, (r + 1) Cp) with Cp = C / P. Per micro-batch of N tokens on every rank:
//   forward   the ranks all-gather their token ids ([P, N]); each looks up its Cp columns for
//             all P N tokens (embedding_partition_lookup, [P, N, Cp]: block q holds rank q's
//             tokens); an all-to-all returns block q to rank q, which assembles its [N, C]
//             input from the P column slices plus the position embedding;
//   backward  each rank cuts its [N, C] input gradient into the P column slices, an all-to-all
//             sends slice q to its owner q, which accumulates the [P, N, Cp] it receives into
//             its [V, Cp] gradient (no all-reduce of the table: each rank owns its columns).
// Traffic per rank and micro-batch: (P-1) N 4 bytes of ids to the ring neighbour, and N Cp 4
// bytes to every other rank in each of the two all-to-alls. llm.c argument order.
namespace moebench {

// out[i, :] = wte_part[ids[i], :] for i < rows; wte_part [V, Cp].
void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp);
// x[n, q Cp + c] = slices[q, n, c] + wpe[n % T, q Cp + c]; slices [P, N, Cp], x [N, P Cp].
void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P, int Cp);
// slices[q, n, c] = dx[n, q Cp + c]: the input gradient cut by column owner.
void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp);
// Accumulates (+=): dwte_part[ids[i], :] += dslices[i, :] for i < rows, every element in i order
// (deterministic: threads split the columns).
void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows, int Cp);
// x[n, :] += wpe[n % T, :]: the positions added to embedded tokens (vocabulary-parallel embedding).
void position_embedding_forward(float* x, const float* wpe, long N, int T, int C);
// Accumulates (+=): dwpe[n % T, :] += dx[n, :], every element in n order (as encoder_backward).
void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C);

}  // namespace moebench
